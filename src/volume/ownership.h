// Handing the volume's state to the agent's user (--user): a recursive chown
// that never follows a symlink and never leaves the volume's mount, skipped
// on restarts once done for the same ids. Every chown goes through the
// Privileged seam.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/dir.h"
#include "base/error.h"
#include "base/privileged.h"
#include "volume/volume.h"

namespace agent_init {

/// The owner the state is handed to.
struct Ids {
  uid_t uid = 0;
  gid_t gid = 0;
};

/// Chowns `dir` itself and everything below it to uid:gid. Symlinks are
/// chowned themselves (never their targets); directories on another mount
/// (a mount point inside the volume) and files with several hard links are
/// left alone. Returns how many entries were changed.
Result<std::uint64_t> ChownTree(const Dir& dir, uid_t uid, gid_t gid, Privileged& ops);

/// Gives the entries `names` of `dir` (files, or directories with all
/// below them) to uid:gid, never following a symlink and leaving a file with
/// several hard links alone, as ChownTree does. Missing entries are skipped.
Result<void> HandOverEntries(const Dir& dir, const std::vector<std::string>& names, Ids user, Privileged& ops);

/// Gives the agent's state (`trees`, recursively; `tops`, themselves only,
/// at every start) and STATE/.agent-init to `user`. The recursive walk runs
/// when `force_walk` is set or the ids differ from the last walk's (a marker
/// in the bookkeeping directory); agent-init's own files are handed over
/// every time, since it rewrites them as root.
Result<void> HandOver(const Volume& volume, const std::vector<const Dir*>& trees,
                      const std::vector<const Dir*>& tops, Ids user, bool force_walk, Privileged& ops);

}  // namespace agent_init
