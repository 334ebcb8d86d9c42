// Moving state that the image holds in VH/run (written before agent-init was
// used) into STATE/run, so that nothing is lost when VH/run is replaced or
// covered. Journaled: every phase can be resumed after a crash.
//
//   collect  each entry of VH/run goes to STATE/.agent-init/migrate/incoming:
//            a rename where possible, else a copy (into migrate/partial, then
//            synced and renamed), and only then is the image's entry removed.
//   merge    incoming is merged into STATE/run: new entries are renamed in,
//            identical files dropped, and where both sides differ the volume's
//            copy stays and the image's goes to .agent-init/conflicts/<id>/.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/dir.h"
#include "base/error.h"
#include "volume/journal.h"
#include "volume/volume.h"

namespace agent_init {

struct MigrationResult {
  size_t moved = 0;                    // entries that now live in STATE/run
  size_t identical = 0;                // files the volume already had, byte for byte
  std::vector<std::string> conflicts;  // where the image's losing copies went
};

/// Migrates the entries of `image_run` into `state_run` (the volume's run
/// directory), working in the volume's bookkeeping directory under its
/// journal. `id` names this migration (and its conflicts directory).
/// `where` goes into the journal for recovery: empty for the image's VH/run
/// into STATE/run; "volume-from" and "into" (paths below STATE) for a move
/// within the volume.
/// `journaled` runs once the intent is in the journal, before anything
/// moves: what must change together with the migration (a crash after it is
/// finished by recovery).
Result<MigrationResult> MigrateRun(const Dir& image_run, const Dir& state_run, Volume& volume,
                                   const std::string& id, const Record& where = {},
                                   const std::function<Result<void>()>& journaled = {});

/// Finishes a migration that `intent` says was interrupted. `image_run` may
/// be null (the image no longer has a run directory).
Result<MigrationResult> ResumeMigration(const Intent& intent, const Dir* image_run, const Dir& state_run,
                                        Volume& volume);

}  // namespace agent_init
