// The state layout: agents started with `elastic-agent container` (7.13+)
// keep their state under $STATE_PATH/data, so the volume is STATE_PATH.
// 7.13 - 7.14 also install and unpack under $STATE_PATH/data (install, tmp),
// which fails on noexec volumes (EACCES) and across mounts (EXDEV): those two
// are made symlinks into the image's exec-capable filesystem, on one mount
// together, re-created at every start. (Two bind mounts could never share a
// mount, and one covering $STATE_PATH/data would hide the state in it.)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/dir.h"
#include "base/error.h"

namespace agent_init {

class Volume;

/// STATE_PATH in agent-init's environment must be unset (the command then
/// gets it set to STATE) or STATE itself; elsewhere is kLayout, naming both.
Result<void> CheckStatePathEnvironment(const std::string& state);

/// Refuses $STATE_PATH/data/.installed: it makes a containerised agent
/// believe it may upgrade itself in place.
Result<void> RefuseInstalledMarker(const Dir& data);

struct ExecLink {
  std::string name;    // under STATE/data: install, tmp
  std::string target;  // absolute, on the image's filesystem, as the agent sees it
};

/// The links a 7.x agent needs: STATE/data/install -> HOME/data/<vh>/install
/// and STATE/data/tmp -> HOME/data/tmp, as the agent sees HOME (`home`).
std::vector<ExecLink> ExecLinks(const std::string& home, const std::string& vh_name);

/// Whether every link in STATE/data (`data`) is in place.
bool ExecLinksInPlace(const Dir& data, const std::vector<ExecLink>& links);

/// Makes each STATE/data/<name> a symlink to its target. Whatever else is
/// there (a directory the 7.13 agent filled, a planted symlink) is moved to
/// STATE/.agent-init/displaced/<id>/ (never followed, never deleted).
/// Returns whether anything changed.
Result<bool> LinkExecDirs(const Dir& data, const std::vector<ExecLink>& links, const Volume& volume,
                          const std::string& id);

}  // namespace agent_init
