// Running the agent: PATH lookup like execvp(3), but with the shell's exit
// codes for failures (126 cannot execute, 127 not found) and a message that
// names the program.
#pragma once

#include <string>
#include <vector>

#include "error.h"

namespace agent_init {

/// The program execve would run for `name`: `name` itself when it contains a
/// '/', else the first match in PATH (default PATH when unset). Errors are
/// kNotFound / kNotExecutable.
Result<std::string> ResolveCommand(const std::string& name);

/// Replaces this process with `argv` and `envp`. Returns only on failure.
Error ExecCommand(const std::vector<std::string>& argv, char* const* envp);

}  // namespace agent_init
