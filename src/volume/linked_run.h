// A VH/run that is a symlink agent-init did not make: an older hand-made
// set-up, or a custom entrypoint that "symlinks the run directory". The
// directory it points at may hold the agent's state (its identity among
// it), which must reach the volume before the symlink is replaced.
#pragma once

#include <optional>
#include <string>

#include "base/dir.h"
#include "base/error.h"
#include "volume/volume.h"

namespace agent_init {

/// Opens what the symlink VH/run (pointing at `link_target`, as written)
/// leads to, when it holds state to migrate into `state_run`. std::nullopt
/// when there is nothing to move: the target is missing or not a directory
/// (a warning names it), empty, or STATE/run itself under another name. An
/// error, before anything changed, when the target is not agent-init's to
/// empty (the volume, a directory above the volume or the versioned home,
/// agent-init's bookkeeping) or cannot be emptied (read-only, no permission).
Result<std::optional<Dir>> OpenLinkedRun(const Dir& vh, const std::string& link_target, const Dir& state_run,
                                         const Volume& volume);

}  // namespace agent_init
