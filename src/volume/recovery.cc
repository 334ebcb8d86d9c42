#include "volume/recovery.h"

#include "volume/migrate.h"
#include "volume/names.h"
#include "volume/snapshot.h"

namespace agent_init {

Result<void> RecoverJournal(Volume& volume, const Dir* vh) {
  Journal& journal = volume.journal();
  auto intent = journal.Read();
  if (!intent) return std::unexpected(intent.error());
  if (!*intent) return {};
  const Intent& in = **intent;
  if (in.op == kOpMigrate) {
    if (vh == nullptr) {
      return Fail(Kind::kCannotPlace, "an interrupted migration waits in " + Q(journal.Path()),
                  "start the agent (or agent-init prepare) once so that it finishes, then try again");
    }
    auto state_run = volume.MakeRun(Layout::kRun);
    if (!state_run) return std::unexpected(state_run.error());
    auto image_run = vh->OpenSub(names::kRun);
    auto r = ResumeMigration(in, image_run ? &*image_run : nullptr, *state_run, volume);
    if (!r) return std::unexpected(r.error());
    return {};
  }
  if (in.op == kOpSnapshot || in.op == kOpRestore) return ResumeSnapshotChange(in, volume);
  return Fail(Kind::kLayout, "journal " + Q(journal.Path()) + " records an unknown change " + Q(in.op),
              "it was written by another agent-init version; run that version once, or remove the file");
}

}  // namespace agent_init
