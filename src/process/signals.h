// Signal names and the --signal-map option (FROM:TO), shared by the command
// line and the supervisor.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace agent_init {

/// "TERM", "SIGTERM", "15", "RTMIN+3", "SIGRTMAX-1" -> the signal number.
std::optional<int> ParseSignal(std::string_view text);

/// "SIGTERM", "SIGRTMIN+3"; the number for unknown ones.
std::string SignalName(int sig);

/// Parses FROM:TO pairs into a map; errors are kUsage. Mapping SIGKILL or
/// SIGSTOP as FROM is refused (they never reach a process), as is SIGCHLD.
Result<std::map<int, int>> ParseSignalMap(const std::vector<std::string>& specs);

}  // namespace agent_init
