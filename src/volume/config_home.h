// The run layout's agent (7.10 - 7.12, and 8.x homes run with `elastic-agent
// run`) keeps its ID and enrolment in HOME itself: Config = Top = two levels
// above its resolved binary, beside the executable data/ (beats bb79569dcf
// P/application/paths/paths.go:29-37, 79-107), and saves them by writing
// NAME.tmp and renaming it over NAME. A per-file symlink is replaced at the
// first save and a bind-mounted file makes the rename fail (EBUSY), so the
// whole directory must be the volume's. With mount permission, STATE/home
// becomes the agent's HOME:
//   - the agent's own files there are the volume's (carried over from the
//     image the first time, volume/carry.h);
//   - the image's other files of HOME are copied there, refreshed at every
//     start (the names copied are recorded in STATE/.agent-init/home-files,
//     so that one a newer image no longer has goes too);
//   - every directory of HOME (data/ with the versioned home and the run
//     directory's bind mount, the volume itself when it is mounted inside
//     HOME) and every mount in it gets a mount point there, where the
//     image's is attached again, with the mounts below it: the executables
//     stay on the image's filesystem, data/tmp and the install directory on
//     one mount.
// Then STATE/home is bind-mounted over HOME, and those are attached again.
#pragma once

#include <string>
#include <vector>

#include "base/dir.h"
#include "base/error.h"
#include "base/privileged.h"
#include "image/agent_files.h"
#include "volume/volume.h"

namespace agent_init {

struct ConfigHome {
  Dir dir;                          // STATE/home
  std::vector<std::string> attach;  // entries of HOME attached again over the mount
  bool in_place = false;            // HOME already is STATE/home (a second start in this container)
};

/// Makes STATE/home ready to be the agent's HOME (`home`, the image's,
/// opened before any mount): the agent's files (`files`, its Config ones)
/// carried over, the image's files copied, mount points made. Nothing is
/// mounted.
Result<ConfigHome> PrepareConfigHome(const Dir& home, Volume& volume, const std::vector<const AgentFile*>& files);

/// Bind-mounts STATE/home over `home` and attaches the image's entries
/// again. On a failure after the first mount, that mount is taken away
/// again. Does nothing when `config_home.in_place`.
Result<void> MountConfigHome(const Dir& home, const ConfigHome& config_home, Privileged& ops);

/// Whether HOME (opened at `home`) is STATE/home already.
Result<bool> ConfigHomeInPlace(const Dir& home, const Volume& volume);

}  // namespace agent_init
