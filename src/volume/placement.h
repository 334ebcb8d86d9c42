// Putting the volume's run directory in place of the image's: a bind mount
// of STATE/run onto VH/run where mounting is permitted, else a symlink
// VH/run -> STATE/run. Whatever the image already held in VH/run is migrated
// into the volume first. Idempotent: a second run finds the work done.
#pragma once

#include <optional>
#include <string>

#include "base/dir.h"
#include "base/error.h"
#include "base/privileged.h"
#include "config.h"
#include "volume/migrate.h"
#include "volume/volume.h"

namespace agent_init {

enum class Placement { kNone, kBind, kSymlink };

std::string_view PlacementName(Placement placement);

/// What VH/run is right now.
struct RunStatus {
  enum class Kind {
    kAbsent,        // no VH/run
    kImageDir,      // the image's own directory
    kBound,         // STATE/run is mounted there
    kLinked,        // a symlink to STATE/run
    kOtherSymlink,  // a symlink elsewhere (left by another configuration)
    kOther,         // a file or something else: a broken image
  };
  Kind kind = Kind::kAbsent;
  bool has_entries = false;  // kImageDir holds files
  std::string link_target;   // for symlinks

  bool placed() const { return kind == Kind::kBound || kind == Kind::kLinked; }
  Placement placement() const {
    return kind == Kind::kBound    ? Placement::kBind
           : kind == Kind::kLinked ? Placement::kSymlink
                                   : Placement::kNone;
  }
};

/// Looks at VH/run without changing anything. `state_run` may be invalid when
/// STATE/run does not exist yet; `link_target` is the absolute path of
/// STATE/run as the agent will see it.
Result<RunStatus> ExamineRun(const Dir& vh, const Dir* state_run, const std::string& link_target);

struct PlaceOutcome {
  Placement placement = Placement::kNone;
  bool changed = false;
  std::optional<MigrationResult> migration;
};

/// Makes VH/run the volume's run directory `state_run` (made by
/// Volume::MakeRun) with `method`, mounting through `ops`.
/// `migration_id` names a migration if one is needed.
Result<PlaceOutcome> PlaceRun(Method method, const Dir& vh, const Dir& state_run, Volume& volume,
                              const std::string& migration_id, Privileged& ops);

}  // namespace agent_init
