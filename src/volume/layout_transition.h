// Upgrades that change the layout under a volume that holds state: 7.10 -
// 7.12 keep the run state in VH/run (the run layout, STATE/run), 7.13+ in
// container mode under STATE_PATH (the state layout, STATE/data/run). The
// layout that last used the volume is recorded (STATE/.agent-init/layout,
// beside the history); when another one is about to start, the state moves
// to where that one's agent reads it before the agent runs: snapshot first,
// then a journaled migration, never a silent fresh start.
#pragma once

#include <optional>
#include <string>

#include "base/atomic_file.h"
#include "base/error.h"
#include "config.h"
#include "volume/volume.h"

namespace agent_init {

struct LayoutTransition {
  enum class What {
    kNone,       // nothing to carry over
    kMove,       // the other layout's run directory moves to this one's
    kIdentical,  // both hold the same state: the other copy goes
    kConflict,   // both hold state, and it differs: stop (65)
  };
  What what = What::kNone;
  std::optional<Layout> last;  // recorded; std::nullopt on a volume from before the record
  Layout from = Layout::kRun;  // whose run directory holds the state
  Layout to = Layout::kRun;    // the layout about to start
  size_t entries = 0;          // in `from`'s run directory
};

/// The layout that last used the volume (its bookkeeping opened), if recorded.
Result<std::optional<Layout>> ReadLastLayout(const Volume& volume);

/// What a start with layout `to` has to carry over. Changes nothing.
Result<LayoutTransition> PlanLayoutTransition(const Volume& volume, Layout to);

/// The 65 error for a conflict: both run directories, and how to resolve it.
Error LayoutConflict(const Volume& volume, const LayoutTransition& t);

/// Records `layout` as the one that last used the volume; kNameLater leaves
/// the record's name to the next fsync of the bookkeeping directory.
Result<void> RecordLayout(const Volume& volume, Layout layout, Durability durability = Durability::kNow);

/// Carries the state over for a start with layout `to` (the lock held) and
/// records `to` as the volume's layout. `id` names the migration and its
/// conflicts directory. True when state moved.
Result<bool> CarryOverLayout(Volume& volume, Layout to, int keep_snapshots, const std::string& id);

}  // namespace agent_init
