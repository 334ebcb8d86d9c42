// The core path, as one checklist: find the versioned home, take the volume,
// finish any interrupted change, snapshot the state on a version change,
// check where executables live, put the volume's run directory in place and
// hand it to the agent's user.
#pragma once

#include <optional>
#include <string>

#include "config.h"
#include "base/error.h"
#include "image/layout_decision.h"
#include "volume/lock.h"
#include "volume/placement.h"
#include "process/users.h"

namespace agent_init {

struct Prepared {
  std::string versioned_home;  // path of VH
  Layout layout = Layout::kRun;
  Placement placement = Placement::kNone;
  bool changed = false;             // false when everything was already in place
  VolumeLock lock;                  // held until the agent exits (exec) or prepare ends
  std::optional<Credentials> user;  // resolved --user, to drop to before the exec
  std::vector<std::pair<std::string, std::string>> environment;  // to set for the command
};

/// Prepares the state for the agent that `command` runs (empty for prepare:
/// the image's entrypoint is read instead). Logs what it does; returns the
/// first failure with its exit class.
Result<Prepared> Prepare(const Config& config, const std::vector<std::string>& command);

/// Absolute path of STATE/run as the agent sees it (the symlink target).
std::string StateRunPath(const Config& config);

/// Opens the state volume (--state), with a message that says what to mount.
Result<Dir> OpenState(const Config& config);

/// Finishes a change that a crash interrupted, before anything else touches
/// the volume (STATE/run included: a restore may have moved it away). `vh`
/// is needed only to resume a migration (may be null).
Result<void> RecoverJournal(Journal& journal, const Dir* vh, const Dir& state, const Dir& aidir);

/// Gives the agent's state (`trees`, recursively; `tops`, themselves only)
/// and STATE/.agent-init to the agent's user.
Result<void> HandOver(const std::vector<const Dir*>& trees, const std::vector<const Dir*>& tops,
                      const Dir& aidir, const Credentials& user, bool force_walk);

}  // namespace agent_init
