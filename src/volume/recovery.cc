#include "volume/recovery.h"

#include <unistd.h>

#include "base/record.h"
#include "volume/carry.h"
#include "volume/layout_transition.h"
#include "volume/linked_run.h"
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
    // A move within the volume (a layout change) names both ends; one from
    // the image's VH/run goes into STATE/run.
    auto from_rel = Lookup(in.args, "volume-from");
    auto into_rel = Lookup(in.args, "into");
    if (!from_rel && vh == nullptr) {
      return Fail(Kind::kCannotPlace, "an interrupted migration waits in " + Q(journal.Path()),
                  "start the agent (or agent-init prepare) once so that it finishes, then try again");
    }
    Layout into = into_rel == Volume::RunRel(Layout::kState) ? Layout::kState : Layout::kRun;
    auto state_run = volume.MakeRun(into);
    if (!state_run) return std::unexpected(state_run.error());
    std::optional<Dir> source;
    if (auto opened = from_rel ? volume.dir().OpenSub(*from_rel) : vh->OpenSub(names::kRun); opened) {
      source = std::move(*opened);
    } else if (auto link = from_rel ? std::nullopt : vh->ReadLink(names::kRun); link) {
      // VH/run is still the symlink of an older set-up: the collect goes on
      // from what it points at, or its entries would be collected twice.
      auto linked = OpenLinkedRun(*vh, *link, *state_run, volume);
      if (!linked) return std::unexpected(linked.error());
      source = std::move(*linked);
    }
    auto r = ResumeMigration(in, source ? &*source : nullptr, *state_run, volume);
    if (!r) return std::unexpected(r.error());
    // A layout change: the volume now holds the state in `into`'s layout,
    // also when the crash came before the record was written.
    if (from_rel) return RecordLayout(volume, into);

    return {};
  }
  if (in.op == kOpSnapshot || in.op == kOpRestore) return ResumeSnapshotChange(in, volume);
  if (in.op == kOpCarry) return ResumeCarry(in, volume);
  return Fail(Kind::kLayout, "journal " + Q(journal.Path()) + " records an unknown change " + Q(in.op),
              "it was written by another agent-init version; run that version once, or remove the file");
}

}  // namespace agent_init
