// Snapshots of STATE/run under STATE/.agent-init/snapshots/<name>/, taken
// when a different versioned home starts on the volume (the agent's own
// upgrade keeps the old run directory for rollback; a container gets none of
// that), and `agent-init restore NAME` to put one back. Both are journaled.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/tree.h"
#include "config.h"
#include "volume/journal.h"
#include "volume/snapshot_list.h"
#include "volume/volume.h"

namespace agent_init {

/// Copies `layout`'s run directory to snapshots/<name>, replacing an older
/// snapshot of that name only once the new one is complete, then keeps the
/// newest `keep` snapshots. A run directory that is a btrfs subvolume is
/// snapshotted at once; other copies share extents where the filesystem can
/// (reflinks). With `subvolume_run` (the run layout's version changes), a
/// run directory on btrfs that is not a subvolume becomes one: the copy is
/// made into a subvolume and takes its place, the old directory is the
/// snapshot.
Result<SnapshotTaken> TakeSnapshot(Volume& volume, Layout layout, const std::string& name, int keep,
                                   bool subvolume_run = false);

/// Puts snapshots/<name> back as `layout`'s run directory; the current run
/// directory becomes the snapshot `saved_as`. The caller holds the volume lock.
Result<void> RestoreSnapshot(Volume& volume, Layout layout, const std::string& name,
                             const std::string& saved_as, int keep);

/// Finishes a snapshot or restore that `intent` says was interrupted, or rolls
/// it back when only its copy had been started.
Result<void> ResumeSnapshotChange(const Intent& intent, Volume& volume);

}  // namespace agent_init
