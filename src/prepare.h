// The core path, as one checklist: find the versioned home, open the volume,
// finish any interrupted change, check where executables live, and put the
// volume's run directory in place.
#pragma once

#include <string>

#include "config.h"
#include "error.h"
#include "persist.h"

namespace agent_init {

struct Prepared {
  std::string versioned_home;  // path of VH
  Placement placement = Placement::kNone;
  bool changed = false;  // false when everything was already in place
};

/// Prepares the state for the agent. Logs what it does; returns the first
/// failure with its exit class.
Result<Prepared> Prepare(const Config& config);

/// Absolute path of STATE/run as the agent sees it (the symlink target).
std::string StateRunPath(const Config& config);

/// A name for a new migration or snapshot: the UTC time, e.g.
/// 20261202T170102Z.
std::string NewChangeId();

}  // namespace agent_init
