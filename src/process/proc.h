// The process tree below a process, read from /proc: what the supervisor
// signals at shutdown (children, grandchildren, re-parented orphans and
// setsid escapees alike).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string_view>
#include <vector>

namespace agent_init {

struct ProcStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  char state = '?';
};

/// Parses /proc/<pid>/stat text (the command name may hold spaces and ')').
std::optional<ProcStat> ParseProcStat(std::string_view text);

/// /proc/<pid>/stat of one process; std::nullopt when it is gone.
std::optional<ProcStat> ReadProcStat(pid_t pid);

/// Every live process below `root` (not `root` itself), zombies excluded.
/// Empty when /proc is unavailable.
std::vector<pid_t> Descendants(pid_t root);

}  // namespace agent_init
