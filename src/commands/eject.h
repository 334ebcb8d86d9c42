// `agent-init eject`: the way out, once the agent keeps its state itself.
// Leaves the volume in the agent's own container layout for the image at
// hand (the volume is STATE_PATH, the run state in STATE/data/run), checks
// it, and only then removes agent-init's bookkeeping; snapshots (and the
// copies a migration set aside) stay unless asked. Refuses for images whose
// own mode cannot keep the state (7.10 - 7.12, `elastic-agent run`).
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "config.h"

namespace agent_init {

struct Ejected {
  std::string state;              // the volume, the agent's STATE_PATH from now on
  std::string run;                // where the agent finds its run state
  bool moved = false;             // the state came over from the run layout
  std::vector<std::string> kept;  // what of STATE/.agent-init stays, and why
  std::string config_path;        // CONFIG_PATH eject found set to another directory than the volume
};

/// Ejects agent-init from the volume at `config.state` for the image at
/// `config.home`; `command` is what the image runs (decides --layout auto,
/// as for inspect). `remove_snapshots` removes the snapshots too.
Result<Ejected> Eject(const Config& config, const std::vector<std::string>& command, bool remove_snapshots);

/// What to change in the manifest (or the container's command) so that the
/// agent runs without agent-init, on stdout after a successful eject.
std::string ManifestChange(const Ejected& ejected);

}  // namespace agent_init
