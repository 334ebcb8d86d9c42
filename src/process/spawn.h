// Starting the supervised command as a child that shares agent-init's memory
// until it execs (clone with CLONE_VM | CLONE_VFORK, as posix_spawn does). A
// fork would copy the page tables of the whole static binary and then take a
// copy-on-write fault for every page either side touches: on the VMs we
// measured, that cost more than everything else agent-init does at a start
// (scripts/bench, case 3). The child runs system calls only; whatever
// allocates or logs happens in the parent, before the clone (the plan) or
// after it (the report of a failure).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "process/users.h"

namespace agent_init {

struct SpawnRequest {
  std::vector<std::string> argv;
  std::optional<Credentials> user;  // switch to this user in the child
  sigset_t mask{};                  // the child's signal mask at the exec
  bool chld_ignored = false;        // give the child SIGCHLD = SIG_IGN back
  bool take_tty = false;            // make the child's group the terminal's foreground
};

struct Spawned {
  pid_t pid = -1;
  // Set when the child could not switch users or execute the command; it
  // has already exited with that error's code, for the caller to reap.
  std::optional<Error> failure;
};

/// Starts the command in its own process group with this process's
/// environment (with HOME from `user`, see HomeFor). Call with every
/// signal blocked: the child unblocks to `mask` only just before its exec, so
/// a signal sent to it in between waits and is never lost. Fails only when
/// the child cannot be created, or when this process may not switch to
/// `user` (CheckCanSwitch).
Result<Spawned> Spawn(const SpawnRequest& request);

}  // namespace agent_init
