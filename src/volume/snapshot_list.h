// The snapshots on the volume (STATE/.agent-init/snapshots/<name>/), in the
// order they were taken, and the pruning to --keep-snapshots. The order is
// recorded, a sequence number per snapshot in snapshots/.order, not read
// from the directories' times: with the clock stepped back (an NTP
// correction, a node whose clock was ahead) the snapshot just taken would
// look the oldest and be pruned first. And how a snapshot is reported.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/dir.h"
#include "base/error.h"
#include "base/tree.h"
#include "volume/volume.h"

namespace agent_init {

struct SnapshotInfo {
  std::string name;
  // Seconds since the epoch: when it was recorded; without a record, its
  // directory's mtime (when it was taken, for a snapshot from before the
  // order was recorded; a copy keeps the run directory's own).
  std::int64_t taken = 0;
  std::uint64_t sequence = 0;  // its place in the order taken; 0 without a record
};

/// Snapshots, newest first: those with a recorded sequence by it, then
/// those without one (taken by an agent-init before 2026-12-07, or all of
/// them when the record cannot be read) by their directories' mtimes.
/// Work-in-progress entries (dot names) are not listed. An absent
/// snapshots directory is an empty list.
Result<std::vector<SnapshotInfo>> ListSnapshots(const Volume& volume);

/// Records `name` in `snapshots` as the newest snapshot, and forgets the
/// ones that are gone: the record is replaced (new file, fsync, rename,
/// fsync of the directory). Nothing is written when `name` is the newest
/// already, or is not there, so recovery may run it again.
Result<void> RecordNewest(const Dir& snapshots, const std::string& name);

/// Removes the snapshots beyond the newest `keep`.
Result<void> Prune(const Volume& volume, int keep);

/// The display path of snapshot `name`.
std::string SnapshotPath(const Volume& volume, const std::string& name);

/// What a snapshot copied, on which filesystem, and how long it took
/// (journal, copy, syncfs, publish and prune).
struct SnapshotTaken {
  CopyStats copy;
  std::string filesystem;  // sys::FilesystemName of the volume
  std::chrono::milliseconds elapsed{0};
};

/// "yes" when every file's data was shared with the original (FICLONE), "no"
/// when none was, "partly" in between ("nothing to share" without data).
std::string_view ReflinkWord(const CopyStats& copy);

/// Whether snapshots on filesystem `fs` (sys::FilesystemName) share the
/// state's extents: "yes; subvolume snapshots" (btrfs), "yes if made with
/// reflink=1" (XFS; the
/// default since xfsprogs 5.1), "no" (full copies: ext4, tmpfs, overlay),
/// "unknown" (each snapshot's log line tells).
std::string_view ReflinkOf(std::string_view fs);

/// The log line of a snapshot taken: its path, files, MiB, reflink,
/// filesystem and milliseconds.
void LogSnapshotTaken(std::string_view message, const Volume& volume, const std::string& name,
                      const SnapshotTaken& taken);

}  // namespace agent_init
