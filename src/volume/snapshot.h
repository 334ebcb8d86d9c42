// Snapshots of STATE/run under STATE/.agent-init/snapshots/<name>/, taken
// when a different versioned home starts on the volume (the agent's own
// upgrade keeps the old run directory for rollback; a container gets none of
// that), and `agent-init restore NAME` to put one back. Both are journaled.
#pragma once

#include <string>
#include <vector>

#include "base/dir.h"
#include "base/error.h"
#include "volume/journal.h"

namespace agent_init {

struct SnapshotInfo {
  std::string name;
  std::int64_t taken = 0;  // seconds since the epoch (the directory's mtime)
};

/// Snapshots, newest first. Work-in-progress entries (dot names) are not
/// listed. An absent snapshots directory is an empty list.
Result<std::vector<SnapshotInfo>> ListSnapshots(const Dir& aidir);

/// Where the agent's run directory is below STATE: "" for STATE/run (run
/// layout), "data" for STATE/data/run (state layout).
using RunParent = std::string;

/// Copies STATE/<parent>/run to snapshots/<name> (a reflink where the
/// filesystem has them), replacing an older snapshot of that name only once
/// the new one is complete, then keeps the newest `keep` snapshots.
Result<void> TakeSnapshot(const Dir& state, const RunParent& parent, const Dir& aidir, Journal& journal,
                          const std::string& name, int keep);

/// Puts snapshots/<name> back as STATE/<parent>/run; the current run
/// directory becomes the snapshot `saved_as`. The caller holds the volume lock.
Result<void> RestoreSnapshot(const Dir& state, const RunParent& parent, const Dir& aidir, Journal& journal,
                             const std::string& name, const std::string& saved_as, int keep);

/// Finishes a snapshot or restore that `intent` says was interrupted, or rolls
/// it back when only its copy had been started.
Result<void> ResumeSnapshotChange(const Intent& intent, const Dir& state, const Dir& aidir, Journal& journal);

}  // namespace agent_init
