// Keeping executables off the volume: where the agent executes and installs
// from must be on the image's exec-capable filesystem, never on the state
// volume, and its temp and install directories must share one mount so that
// its renames between them cannot fail with EXDEV.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/dir.h"
#include "base/mount_table.h"

namespace agent_init {

/// Something wrong that prepare refuses and inspect reports.
struct Problem {
  std::string code;  // stable identifier, e.g. "noexec"
  std::string path;
  std::string message;
};

/// One path and the mount it lives on.
struct Place {
  std::string role;  // state, versioned_home, components, install, downloads, tmp
  std::string path;
  std::string real_path;  // symlinks resolved; what the mount table speaks of
  std::uint64_t mount_id = 0;
  std::uint64_t dev = 0;
  bool noexec = false;   // from statvfs: the mount's flag
  bool nosuid = false;   // from statvfs: setuid bits and file capabilities are ignored there
  std::string selinux;   // the directory's SELinux label (security.selinux), empty when none
  bool on_root = false;  // on the same mount as "/"
  bool found_mount = false;
  Mount mount;  // a copy of the mount table entry, once looked up
};

/// Supplies the mount table when it is needed (a /proc read and a parse the
/// restart path can mostly do without); may return nullptr.
using MountTableSource = std::function<const MountTable*()>;

/// Copies the mount table's entry for `place` into it (for reports).
void AttachMount(Place& place, const MountTable& table);

struct PlacesReport {
  std::vector<Place> places;  // state first, then the executable places that exist
  std::vector<Problem> problems;
  std::vector<std::string> warnings;
  // data/tmp and the install directory on different mounts: the agent's
  // renames between them fail with EXDEV. Set by EvaluatePlaces;
  // ApplyExdevRule (which CheckPlaces applies) moves it into the problems or
  // the warnings.
  std::optional<Problem> exdev;
};

/// How much CheckPlaces finds out: what the rules read (prepare, every
/// start), or also what a report shows (inspect: every place's SELinux label).
enum class PlaceFacts { kForRules, kForReport };

/// Looks up the mounts of STATE and of every place the agent executes or
/// installs from (VH, VH/components, VH/install, VH/downloads, DATA/tmp,
/// those that exist; DATA is HOME/data or a seeded copy), then evaluates them,
/// with the EXDEV rule for `links_exec_dirs` (LinksExecDirs of the layout
/// decision). The mount table is read only when the facts from statx and
/// statvfs do not settle a rule. A place's `real_path` is its `path` unless a
/// rule needs it resolved.
PlacesReport CheckPlaces(const Dir& data, const Dir& vh, const Dir& state, const MountTableSource& table,
                         bool links_exec_dirs, PlaceFacts facts = PlaceFacts::kForRules);

/// The rules, over facts already gathered (unit-testable without mounts):
/// no executable place on a noexec mount or on the volume; tmp and the install
/// directory on one mount. Warnings: the volume not on a volume, an
/// executable place on a nosuid mount, a volume labelled for SELinux but not
/// for containers.
void EvaluatePlaces(PlacesReport& report, const MountTableSource& table = {});

/// The EXDEV rule: tmp and the install directory on different mounts is a
/// problem where agent-init links a 7.x agent's own install and temp paths to
/// them (`links_exec_dirs`), and a warning elsewhere. Moves `report.exdev`
/// into the problems or the warnings.
void ApplyExdevRule(PlacesReport& report, bool links_exec_dirs);

}  // namespace agent_init
