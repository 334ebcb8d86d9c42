// Dropping root for the agent, as gosu and su-exec do: setgroups, setgid,
// setuid, then verify that nothing of root is left.
#pragma once

#include <optional>
#include <string>

#include "base/error.h"
#include "process/users.h"

namespace agent_init {

/// Refuses to run when agent-init itself was started setuid or setgid (the
/// kernel's AT_SECURE): it is an entrypoint, not a privilege broker.
Result<void> RefuseSetuidStart();

/// Whether this process may switch to `creds`, decided before anything
/// changes: fine when it already runs as them or is root; kDenied otherwise.
Result<void> CheckCanSwitch(const Credentials& creds);

/// Where a switch stopped, for the message.
enum class SwitchStep { kDone, kSetgroups, kSetgid, kSetuid, kIdsLeft, kCapabilitiesLeft };
struct SwitchOutcome {
  SwitchStep failed = SwitchStep::kDone;
  int err = 0;  // errno of the failed system call
};

/// Switches this process to `creds` (nothing to do when it already runs as
/// them) and verifies the real, effective and saved ids and, for a non-root
/// target, that no capability is left in any set. System calls only, no
/// allocation: a child that shares agent-init's memory (spawn.h) runs it.
SwitchOutcome SwitchIds(const Credentials& creds) noexcept;

/// The error class of a failed switch (allocation-free, for that child's
/// exit code) and the error itself.
Kind SwitchFailureKind(SwitchOutcome outcome) noexcept;
Error SwitchFailure(const Credentials& creds, SwitchOutcome outcome);

/// HOME for the agent: the passwd entry's home, or / without one, whatever
/// the caller's was (Docker, Podman and containerd set /root), as gosu sets it.
std::string HomeFor(const Credentials& creds);

/// CheckCanSwitch, SwitchIds, and HOME from HomeFor: the exec mode's drop.
Result<void> DropPrivileges(const Credentials& creds);

}  // namespace agent_init
