// Running the agent: PATH lookup like execvp(3), but with the shell's exit
// codes for failures (126 cannot execute, 127 not found) and a message that
// names the program.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"

namespace agent_init {

/// Where a command may be, worked out before anything is run: the name
/// itself when it contains a '/', else each PATH entry (the default PATH
/// when unset) joined with it.
struct CommandSearch {
  std::string name;
  std::string path;  // PATH as searched; empty for a name with a '/'
  std::vector<std::string> candidates;
};
CommandSearch SearchFor(const std::string& name);

/// The outcome of a search: the candidate to execute, or -1; and the first
/// regular file found without execute permission, or -1.
struct Found {
  int index = -1;
  int denied = -1;
};

/// Looks through the candidates with stat(2) and access(2) only: no
/// allocation, so that a child sharing agent-init's memory (spawn.h) can run
/// it after switching users. Directories are skipped, like execvp does.
Found FindProgram(const CommandSearch& search) noexcept;

/// The error for a search that found nothing: kNotExecutable naming the
/// first file that is not executable, else kNotFound naming PATH. Its class
/// alone is allocation-free, like FindProgram (for that child's exit code).
Kind SearchFailureKind(Found found) noexcept;
Error SearchFailure(const CommandSearch& search, Found found);

/// The error for a failed execve(2) of `program`: kNotFound when the file is
/// not there, kNotExecutable otherwise. Its class alone is allocation-free.
Kind ExecFailureKind(int err) noexcept;
Error ExecFailure(const std::string& program, int err);

/// The program execve would run for `name`. Errors are kNotFound /
/// kNotExecutable.
Result<std::string> ResolveCommand(const std::string& name);

/// Replaces this process with `argv` and `envp`. Returns only on failure.
Error ExecCommand(const std::vector<std::string>& argv, char* const* envp);

}  // namespace agent_init
