#include "volume/layout_transition.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "base/atomic_file.h"
#include "base/log.h"
#include "base/record.h"
#include "base/tree.h"
#include "image/agent_files.h"
#include "volume/carry.h"
#include "volume/migrate.h"
#include "volume/names.h"
#include "volume/snapshot.h"

namespace agent_init {
namespace {

Layout Other(Layout layout) { return layout == Layout::kRun ? Layout::kState : Layout::kRun; }

std::string Shown(const Volume& volume, Layout layout) { return volume.dir().PathOf(Volume::RunRel(layout)); }

// The run directory of `layout`, when it exists, and how many entries it holds.
struct Held {
  std::optional<Dir> dir;
  size_t entries = 0;
};

Result<Held> Look(const Volume& volume, Layout layout) {
  Held held;
  auto run = volume.dir().OpenSub(Volume::RunRel(layout));
  if (!run) {
    if (run.error().err == ENOENT) return held;
    return std::unexpected(run.error());
  }
  auto entries = run->List();
  if (!entries) return std::unexpected(entries.error());
  held.entries = entries->size();
  held.dir = std::move(*run);
  return held;
}

// Where the volume keeps the agent's own files (image/agent_files.h) in
// `layout`: the run layout's in STATE/home and STATE/versioned-home (volume/
// identity.h), the state layout's where the agent's container mode reads
// them with CONFIG_PATH unset: STATE and STATE/data.
std::string KeptIn(Layout layout, AgentDir dir) {
  if (layout == Layout::kRun) return dir == AgentDir::kConfig ? names::kHome : names::kVersionedHome;
  return dir == AgentDir::kConfig ? "" : names::kData;
}

// The agent's files of both layouts' generations that live in `dir`.
std::vector<const AgentFile*> FilesOf(AgentDir dir) {
  std::vector<const AgentFile*> out;
  for (Layout l : {Layout::kRun, Layout::kState}) {
    for (const AgentFile* f : AgentFilesFor(l)) {
      bool seen = std::any_of(out.begin(), out.end(), [&](const AgentFile* o) { return o->name == f->name; });
      if (f->dir == dir && !seen) out.push_back(f);
    }
  }
  return out;
}

// The agent's own files in the other layout's places come to this one's, at
// every start and whatever the record says: a carry that a crash cut short
// is finished by recovery into the layout that was starting then, and the
// next start may be the other one (a rollback). Before the run state moves.
Result<void> CarryAgentFilesOver(Volume& volume, Layout from, Layout to) {
  for (AgentDir dir : {AgentDir::kConfig, AgentDir::kHome}) {
    const std::string from_rel = KeptIn(from, dir), into_rel = KeptIn(to, dir);
    auto source = OpenVolumePlace(volume, from_rel);
    if (!source) return std::unexpected(source.error());
    if (!*source) continue;
    auto carried = CarryAgentFiles(volume, **source, from_rel, into_rel, FilesOf(dir), /*move=*/true);
    if (!carried) return std::unexpected(carried.error());
  }
  return {};
}

}  // namespace

Result<void> RecordLayout(const Volume& volume, Layout layout, Durability durability) {
  auto w = WriteFileAtomic(volume.bookkeeping(), names::kLayoutRecord, std::string(LayoutName(layout)) + "\n",
                           0600, durability);
  if (!w) return std::unexpected(Wrap(w.error(), "record the volume's layout"));
  return {};
}

Result<std::optional<Layout>> ReadLastLayout(const Volume& volume) {
  if (!volume.bookkeeping().valid()) return std::optional<Layout>{};  // agent-init never ran here
  auto text = volume.bookkeeping().ReadSmallFile(names::kLayoutRecord, 64);
  if (!text) return std::unexpected(text.error());
  if (!*text) return std::optional<Layout>{};
  std::string_view name = **text;
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.remove_suffix(1);
  for (Layout l : {Layout::kRun, Layout::kState}) {
    if (name == LayoutName(l)) return std::optional<Layout>{l};
  }
  return Fail(Kind::kLayout,
              "read " + Q(volume.BookkeepingPath(names::kLayoutRecord)) + ": " + Q(name) + " is not a layout",
              "write `run` or `state` into it: the layout that last ran on this volume");
}

Result<LayoutTransition> PlanLayoutTransition(const Volume& volume, Layout to) {
  LayoutTransition t;
  t.to = to;
  t.from = Other(to);
  auto last = ReadLastLayout(volume);
  if (!last) return std::unexpected(last.error());
  t.last = *last;
  if (t.last == to) return t;
  auto from = Look(volume, t.from);
  if (!from) return std::unexpected(from.error());
  t.entries = from->entries;
  if (t.entries == 0) return t;
  auto into = Look(volume, to);
  if (!into) return std::unexpected(into.error());
  if (into->entries == 0) {
    t.what = LayoutTransition::What::kMove;
    return t;
  }
  auto same = SameTree(*from->dir, *into->dir);
  if (!same) return std::unexpected(same.error());
  t.what = *same ? LayoutTransition::What::kIdentical : LayoutTransition::What::kConflict;
  return t;
}

Error LayoutConflict(const Volume& volume, const LayoutTransition& t) {
  const std::string from = Shown(volume, t.from), to = Shown(volume, t.to);
  const std::string aside =
      volume.BookkeepingPath(std::string("set-aside-") + std::string(LayoutName(t.from)));
  const std::string aside_to =
      volume.BookkeepingPath(std::string("set-aside-") + std::string(LayoutName(t.to)));
  return MakeError(
      Kind::kLayout, 0,
      "the volume holds the agent's state twice, and the copies differ: " + Q(from) + " (the " +
          std::string(LayoutName(t.from)) + " layout's" + (t.last ? ", which last ran here" : "") + ") and " +
          Q(to) + " (the " + std::string(LayoutName(t.to)) +
          " layout's, about to start); agent-init will not choose which identity the agent keeps",
      "keep one and start again: to go on with " + Q(from) + ", `mv " + to + " " + aside_to +
          "`; to go on with " + Q(to) + ", `mv " + from + " " + aside + "`");
}

Result<bool> CarryOverLayout(Volume& volume, Layout to, int keep_snapshots, const std::string& id) {
  auto plan = PlanLayoutTransition(volume, to);
  if (!plan) return std::unexpected(plan.error());
  const LayoutTransition& t = *plan;
  using What = LayoutTransition::What;
  if (t.what == What::kConflict) return std::unexpected(LayoutConflict(volume, t));
  if (auto carried = CarryAgentFilesOver(volume, t.from, to); !carried) return std::unexpected(carried.error());
  bool moved = false;
  if (t.what == What::kIdentical) {
    auto parent = volume.OpenRunParent(t.from);
    if (!parent) return std::unexpected(parent.error());
    auto removed = RemoveEntry(*parent, names::kRun);
    if (!removed) return std::unexpected(removed.error());
    log::Info("the other layout's run directory held the same state; removed it",
              {{"removed", Shown(volume, t.from)}, {"kept", Shown(volume, to)}});
  } else if (t.what == What::kMove) {
    log::Info(
        "the volume was last used by the other layout: carrying the agent's state over",
        {{"from", Shown(volume, t.from)}, {"to", Shown(volume, to)}, {"entries", std::to_string(t.entries)}});
    if (keep_snapshots > 0) {
      std::string name = "layout-" + std::string(LayoutName(t.from)) + "-to-" + std::string(LayoutName(to));
      auto taken = TakeSnapshot(volume, t.from, name, keep_snapshots);
      if (!taken) return std::unexpected(taken.error());
      LogSnapshotTaken("snapshot of the state before the layout change taken", volume, name, *taken);
    }
    auto from = volume.dir().OpenSub(Volume::RunRel(t.from));
    if (!from) return std::unexpected(from.error());
    auto into = volume.MakeRun(to);
    if (!into) return std::unexpected(into.error());
    // The record flips with the journaled move: from here on a crash is
    // finished by recovery, into the layout the record names.
    auto migrated = MigrateRun(
        *from, *into, volume, id,
        {{"volume-from", std::string(Volume::RunRel(t.from))}, {"into", std::string(Volume::RunRel(to))}},
        [&] { return RecordLayout(volume, to); });
    if (!migrated) return std::unexpected(migrated.error());
    log::Info("carried the agent's state over to the layout about to start",
              {{"to", into->path()},
               {"moved", std::to_string(migrated->moved)},
               {"conflicts", std::to_string(migrated->conflicts.size())}});
    moved = true;
  }
  if (t.last != to && !moved) {
    // An emptied run directory of the other layout (a move that a crash
    // interrupted, finished by the journal's recovery) goes too.
    if (t.entries == 0) {
      if (auto parent = volume.OpenRunParent(t.from); parent)
        ::unlinkat(parent->fd(), names::kRun, AT_REMOVEDIR);
    }
    // The volume's first record need not be durable at once: losing it
    // leaves the volume as it was before (no layout last ran here), which
    // the next start handles alike, and the history written next, in the
    // same directory, makes it durable. A record that replaces another is.
    const Durability durability = t.last ? Durability::kNow : Durability::kNameLater;
    if (auto recorded = RecordLayout(volume, to, durability); !recorded)
      return std::unexpected(recorded.error());
  }
  return moved;
}

}  // namespace agent_init
