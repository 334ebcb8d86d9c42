// `agent-init restore NAME`: the rollback the agent's own upgrade watcher
// would have done, for operators. Puts a snapshot back as STATE/run and keeps
// the current one as a snapshot. Refuses while anything holds the volume.
#pragma once

#include <string>

#include "config.h"
#include "base/error.h"

namespace agent_init {

Result<void> Restore(const Config& config, const std::string& name);

}  // namespace agent_init
