// Dropping root for the agent, as gosu and su-exec do: setgroups, setgid,
// setuid, then verify that nothing of root is left.
#pragma once

#include "error.h"
#include "users.h"

namespace agent_init {

/// Refuses to run when agent-init itself was started setuid or setgid (the
/// kernel's AT_SECURE): it is an entrypoint, not a privilege broker.
Result<void> RefuseSetuidStart();

/// Switches this process to `creds` (a no-op when it already runs as them)
/// and sets HOME from the passwd entry when HOME is unset. Verifies the real,
/// effective and saved ids and, for a non-root target, that no capability is
/// left in any set. Not root and asked for another user: kDenied.
Result<void> DropPrivileges(const Credentials& creds);

}  // namespace agent_init
