// Noticing that a different versioned home starts on the volume than last
// time (an image change), keeping the state as the previous version left it,
// and recording the change in the history.
#pragma once

#include <optional>
#include <string>

#include "base/error.h"
#include "config.h"
#include "volume/history.h"
#include "volume/volume.h"

namespace agent_init {

/// When `vh_name` is not the versioned home the history names, snapshots
/// `layout`'s run directory under the previous name (unless `keep_snapshots`
/// is 0) and warns on a return to an older version. Returns whether it took
/// a snapshot.
Result<bool> HandleVersionChange(Volume& volume, const std::optional<History>& history,
                                 const std::string& vh_name, Layout layout, int keep_snapshots);

/// Records `vh_name` as the volume's current versioned home (nothing to do
/// when it already is).
Result<void> RecordVersion(const Volume& volume, const std::optional<History>& history,
                           const std::string& vh_name);

}  // namespace agent_init
