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
#include "volume/volume.h"

namespace agent_init {

struct SnapshotInfo {
  std::string name;
  std::int64_t taken = 0;  // seconds since the epoch (the directory's mtime)
};

/// Snapshots, newest first. Work-in-progress entries (dot names) are not
/// listed. An absent snapshots directory is an empty list.
Result<std::vector<SnapshotInfo>> ListSnapshots(const Volume& volume);

/// The display path of snapshot `name`.
std::string SnapshotPath(const Volume& volume, const std::string& name);

/// What a snapshot copied, on which filesystem, and how long it took
/// (journal, copy, syncfs, publish and prune).
struct SnapshotTaken {
  CopyStats copy;
  std::string filesystem;  // sys::FilesystemName of the volume
  std::chrono::milliseconds elapsed{0};
};

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

/// Puts snapshots/<name> back as `layout`'s run directory; the current run
/// directory becomes the snapshot `saved_as`. The caller holds the volume lock.
Result<void> RestoreSnapshot(Volume& volume, Layout layout, const std::string& name,
                             const std::string& saved_as, int keep);

/// Finishes a snapshot or restore that `intent` says was interrupted, or rolls
/// it back when only its copy had been started.
Result<void> ResumeSnapshotChange(const Intent& intent, Volume& volume);

}  // namespace agent_init
