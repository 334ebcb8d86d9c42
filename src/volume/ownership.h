// Handing the volume's state to the agent's user (--user): a recursive
// chown that never follows a symlink and never leaves the volume's mount.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "base/dir.h"
#include "base/error.h"

namespace agent_init {

/// Chowns `dir` itself and everything below it to uid:gid. Symlinks are
/// chowned themselves (never their targets); directories on another mount
/// (a mount point inside the volume) are left alone. Returns how many
/// entries were changed.
Result<std::uint64_t> ChownTree(const Dir& dir, uid_t uid, gid_t gid);

}  // namespace agent_init
