// Finishing a change that a crash interrupted (the journal's intent), before
// anything else touches the volume.
#pragma once

#include "base/dir.h"
#include "base/error.h"
#include "volume/volume.h"

namespace agent_init {

/// Finishes (or rolls back) the unfinished change the volume's journal
/// records, if any; STATE/run included, since a restore may have moved it
/// away. `vh` is needed only to resume a migration (may be null: restore).
Result<void> RecoverJournal(Volume& volume, const Dir* vh);

}  // namespace agent_init
