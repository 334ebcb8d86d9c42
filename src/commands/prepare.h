// The core path, as one checklist: open the image as the agent will see it,
// take the volume, finish any interrupted change, snapshot the state on a
// version change, check where executables live, put the volume's run
// directory in place and hand it to the agent's user.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/privileged.h"
#include "config.h"
#include "process/users.h"
#include "process/watcher.h"
#include "volume/identity.h"
#include "volume/lock.h"
#include "volume/placement.h"

namespace agent_init {

struct Prepared {
  std::string versioned_home;  // path of VH
  Layout layout = Layout::kRun;
  Placement placement = Placement::kNone;
  bool changed = false;  // false when everything was already in place
  VolumeLock lock;       // held until the agent exits (exec) or prepare ends
  std::vector<EnvChange> environment;  // for the command: STATE_PATH, CONFIG_PATH set; FLEET_ENROLL unset
  std::unique_ptr<Watcher> watcher;    // --supervise: copies the agent's saves onto the volume
};

/// Prepares the state for the agent that `command` runs (empty for prepare:
/// the image's entrypoint is read instead), handing it to `user` when set.
/// Mounts and chowns go through `ops`. Logs what it does; returns the first
/// failure with its exit class.
Result<Prepared> Prepare(const Config& config, const std::optional<Credentials>& user,
                         const std::vector<std::string>& command, Privileged& ops = Kernel());

}  // namespace agent_init
