// `agent-init restore NAME`: the rollback the agent's own upgrade watcher
// would have done, for operators. Puts a snapshot back as the run directory
// and keeps the current one as a snapshot. Refuses while anything holds the
// volume.
#pragma once

#include <optional>
#include <string>

#include "base/error.h"
#include "base/privileged.h"
#include "config.h"
#include "process/users.h"

namespace agent_init {

/// A name `restore` accepts: a snapshot's (64 otherwise).
Result<void> CheckSnapshotName(const std::string& name);

/// Restores snapshot `name` on the volume at `config.state`, in the layout
/// `config.layout` names (auto: the one the volume holds), and hands the
/// restored state to `user` when set.
Result<void> Restore(const Config& config, const std::optional<Credentials>& user, const std::string& name,
                     Privileged& ops = Kernel());

}  // namespace agent_init
