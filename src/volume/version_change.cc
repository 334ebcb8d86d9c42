#include "volume/version_change.h"

#include <algorithm>

#include "base/clock.h"
#include "base/log.h"
#include "volume/snapshot.h"

namespace agent_init {

Result<bool> HandleVersionChange(Volume& volume, const std::optional<History>& history,
                                 const std::string& vh_name, Layout layout, int keep_snapshots) {
  if (!history || history->current == vh_name || history->current.empty()) return false;
  const std::string& previous = history->current;
  log::Info("a different versioned home starts on this volume", {{"previous", previous}, {"now", vh_name}});
  bool snapshotted = false;
  if (keep_snapshots > 0) {
    // The run layout's STATE/run is the agent's only through VH/run, so that
    // a subvolume there gives it no new cross-device renames.
    auto taken = TakeSnapshot(volume, layout, previous, keep_snapshots, layout == Layout::kRun);
    if (!taken) return std::unexpected(taken.error());
    LogSnapshotTaken("snapshot of the previous version's state taken", volume, previous, *taken);
    snapshotted = true;
  }
  bool returning = std::any_of(history->changes.begin(), history->changes.end(),
                               [&](const HistoryEntry& c) { return c.from == vh_name; });
  if (returning) {
    auto snapshots = ListSnapshots(volume);
    bool have = snapshots && std::any_of(snapshots->begin(), snapshots->end(),
                                         [&](const SnapshotInfo& s) { return s.name == vh_name; });
    log::Warn("going back to an older versioned home: it runs on the newer version's state",
              {{"from", previous},
               {"to", vh_name},
               {"older_state", have ? SnapshotPath(volume, vh_name) : std::string("no snapshot kept")},
               {"restore_with", "agent-init restore " + vh_name}});
  }
  return snapshotted;
}

Result<void> RecordVersion(const Volume& volume, const std::optional<History>& history,
                           const std::string& vh_name) {
  if (history && history->current == vh_name) return {};
  return WriteHistory(volume.bookkeeping(), WithChange(history.value_or(History{}), vh_name, UtcNow()));
}

}  // namespace agent_init
