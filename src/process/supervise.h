// --supervise: agent-init stays as the command's parent (PID 1 in a
// container, or a child subreaper elsewhere), forwards signals, reaps every
// orphan, and shuts the whole process tree down with a grace period.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "process/start_signals.h"
#include "process/users.h"
#include "process/watcher.h"

namespace agent_init {

struct SuperviseOptions {
  int grace_seconds = 10;         // from SIGTERM to SIGKILL for the remaining descendants
  bool signal_group = false;      // forward to the child's process group, not the child
  std::map<int, int> signal_map;  // rewrite FROM -> TO before forwarding; TO 0 drops FROM
  std::vector<int> keep_fds;      // fds the supervisor keeps open (the volume lock)
  Watcher* watcher = nullptr;     // woken when its fd is readable and once the command exited
  CallerSignals caller;           // what the command gets back (main blocked everything first)
};

/// Starts `argv` as a child, with this process's environment (dropping to
/// `user` in the child when given), and supervises it until it and its
/// descendants are gone. Returns the exit code for this process: the child's
/// code, or 128+N when signal N killed it. A child that could not be started,
/// could not switch users or could not execute the command is an error (its
/// exit class says 126, 127, 77...), for the caller to report. Never fails
/// once the command runs: problems are logged.
Result<int> Supervise(const std::vector<std::string>& argv, const std::optional<Credentials>& user,
                      const SuperviseOptions& options);

}  // namespace agent_init
