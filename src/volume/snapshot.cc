#include "volume/snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "base/clock.h"
#include "base/fault.h"
#include "volume/history.h"
#include "image/home_files.h"
#include "base/log.h"
#include "base/record.h"
#include "base/sys.h"
#include "base/tree.h"

namespace agent_init {
namespace {

constexpr const char* kSnapshots = "snapshots";
constexpr const char* kPartial = ".partial";                // in snapshots/: a copy being made
constexpr const char* kOld = ".old";                        // in snapshots/: the snapshot being replaced
constexpr const char* kRestorePartial = "restore.partial";  // in .agent-init/: the copy to restore

bool ExistsIn(const Dir& dir, const char* name) {
  struct stat st;
  return ::fstatat(dir.fd(), name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

Result<void> Rename(const Dir& from, const std::string& a, const Dir& to, const std::string& b) {
  if (sys::RenameNoReplace(from.fd(), a.c_str(), to.fd(), b.c_str()) < 0) {
    return SysFail(errno, "rename " + Q(from.PathOf(a)) + " to " + Q(to.PathOf(b)));
  }
  return {};
}

// Names a snapshot directory with the time it was taken: its mtime.
void Stamp(const Dir& snapshots, const std::string& name) {
  struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
  ::utimensat(snapshots.fd(), name.c_str(), now, AT_SYMLINK_NOFOLLOW);
}

Result<void> Prune(const Dir& aidir, int keep) {
  auto list = ListSnapshots(aidir);
  if (!list) return std::unexpected(list.error());
  if (static_cast<int>(list->size()) <= keep) return {};
  auto snapshots = aidir.OpenSub(kSnapshots);
  if (!snapshots) return std::unexpected(snapshots.error());
  for (size_t i = static_cast<size_t>(std::max(keep, 0)); i < list->size(); ++i) {
    auto removed = RemoveEntry(*snapshots, (*list)[i].name);
    if (!removed) return std::unexpected(removed.error());
    FaultPoint("snapshot prune");
    log::Info("removed an old snapshot", {{"snapshot", snapshots->PathOf((*list)[i].name)}});
  }
  return {};
}

// Copies `name` in `from` to `partial` in `to`, starting over from any
// earlier, interrupted copy, and makes it durable.
Result<void> CopyDurably(const Dir& from, const std::string& name, const Dir& to,
                         const std::string& partial) {
  auto cleared = RemoveEntry(to, partial);
  if (!cleared) return cleared;
  auto copied = CopyEntry(from, name, to, partial);
  if (!copied) return copied;
  auto synced = SyncFilesystem(to);
  if (!synced) return synced;
  FaultPoint("snapshot copy");
  return {};
}

// Phase publish of a snapshot: snapshots/.partial becomes snapshots/<name>;
// an older <name> is moved to .old first and removed last. Every step can be
// repeated after a crash.
Result<void> Publish(const Dir& snapshots, const std::string& name) {
  if (ExistsIn(snapshots, kPartial)) {
    if (ExistsIn(snapshots, name.c_str())) {
      auto cleared = RemoveEntry(snapshots, kOld);
      if (!cleared) return cleared;
      auto moved = Rename(snapshots, name, snapshots, kOld);
      if (!moved) return moved;
      FaultPoint("snapshot publish aside");
    }
    auto published = Rename(snapshots, kPartial, snapshots, name);
    if (!published) return published;
    Stamp(snapshots, name);
    auto synced = SyncDir(snapshots);
    if (!synced) return synced;
    FaultPoint("snapshot publish");
  }
  return RemoveEntry(snapshots, kOld);
}

// Phase swap of a restore: the current run goes to snapshots/<saved>, the
// restored copy becomes run.
Result<void> Swap(const Dir& parent, const Dir& aidir, const Dir& snapshots, const std::string& saved) {
  if (!ExistsIn(aidir, kRestorePartial)) return {};
  if (ExistsIn(parent, "run")) {
    auto moved = Rename(parent, "run", snapshots, saved);
    if (!moved) return moved;
    Stamp(snapshots, saved);
    FaultPoint("restore save current");
  }
  auto restored = Rename(aidir, kRestorePartial, parent, "run");
  if (!restored) return restored;
  auto s1 = SyncDir(parent);
  if (!s1) return s1;
  auto s2 = SyncDir(snapshots);
  if (!s2) return s2;
  FaultPoint("restore swap");
  return {};
}

// The directory that holds the run directory, as the intent records it.
Result<Dir> OpenRunParent(const Dir& state, const Intent& intent) {
  std::string rel = Lookup(intent.args, "run-parent").value_or("");
  return rel.empty() ? state.Dup() : state.OpenSub(rel);
}

int KeepFrom(const Intent& intent) {
  auto keep = Lookup(intent.args, "keep");
  return keep ? std::atoi(keep->c_str()) : 2;
}

Result<void> RunSnapshot(Intent intent, const Dir& state, const Dir& aidir, Journal& journal) {
  auto snapshots = aidir.MakeSub(kSnapshots, 0700);
  if (!snapshots) return std::unexpected(snapshots.error());
  if (intent.phase == "copy") {
    auto parent = OpenRunParent(state, intent);
    if (!parent) return std::unexpected(parent.error());
    auto copied = CopyDurably(*parent, "run", *snapshots, kPartial);
    if (!copied) return copied;
    intent.phase = "publish";
    auto w = journal.Write(intent);
    if (!w) return w;
  }
  if (intent.phase == "publish") {
    auto published = Publish(*snapshots, intent.id);
    if (!published) return published;
    intent.phase = "prune";
    auto w = journal.Write(intent);
    if (!w) return w;
  }
  if (intent.phase != "prune") {
    return Fail(Kind::kLayout,
                "journal " + Q(aidir.PathOf(Journal::kFile)) + ": unknown snapshot phase " + Q(intent.phase));
  }
  auto pruned = Prune(aidir, KeepFrom(intent));
  if (!pruned) return pruned;
  return journal.Clear();
}

Result<void> RunRestore(Intent intent, const Dir& state, const Dir& aidir, Journal& journal) {
  auto snapshots = aidir.MakeSub(kSnapshots, 0700);
  if (!snapshots) return std::unexpected(snapshots.error());
  std::string saved = Lookup(intent.args, "saved-as").value_or("before-restore");
  if (intent.phase == "copy") {
    auto copied = CopyDurably(*snapshots, intent.id, aidir, kRestorePartial);
    if (!copied) return copied;
    intent.phase = "swap";
    auto w = journal.Write(intent);
    if (!w) return w;
  }
  if (intent.phase == "swap") {
    auto parent = OpenRunParent(state, intent);
    if (!parent) return std::unexpected(parent.error());
    auto swapped = Swap(*parent, aidir, *snapshots, saved);
    if (!swapped) return swapped;
    intent.phase = "prune";
    auto w = journal.Write(intent);
    if (!w) return w;
  }
  if (intent.phase != "prune") {
    return Fail(Kind::kLayout,
                "journal " + Q(aidir.PathOf(Journal::kFile)) + ": unknown restore phase " + Q(intent.phase));
  }
  auto pruned = Prune(aidir, KeepFrom(intent));
  if (!pruned) return pruned;
  // The state belongs to the restored version again: its next start takes
  // no snapshot, another version's snapshots it under its own name. Inside
  // the journaled change, so that a crash cannot leave the history saying
  // otherwise.
  if (ParseVersionedHomeName(intent.id)) {
    auto history = ReadHistory(aidir);
    if (!history) return std::unexpected(history.error());
    if (!*history || (*history)->current != intent.id) {
      auto written = WriteHistory(aidir, WithChange(history->value_or(History{}), intent.id, UtcNow()));
      if (!written) return written;
    }
  }
  return journal.Clear();
}

}  // namespace

Result<std::vector<SnapshotInfo>> ListSnapshots(const Dir& aidir) {
  std::vector<SnapshotInfo> out;
  auto snapshots = aidir.OpenSub(kSnapshots);
  if (!snapshots) {
    if (snapshots.error().err == ENOENT) return out;
    return std::unexpected(snapshots.error());
  }
  auto entries = snapshots->List();
  if (!entries) return std::unexpected(entries.error());
  for (const auto& e : *entries) {
    if (e.name.starts_with('.')) continue;
    struct stat st;
    if (::fstatat(snapshots->fd(), e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
      continue;
    out.push_back({e.name, static_cast<std::int64_t>(st.st_mtime)});
  }
  std::sort(out.begin(), out.end(), [](const SnapshotInfo& a, const SnapshotInfo& b) {
    return a.taken != b.taken ? a.taken > b.taken : a.name > b.name;
  });
  return out;
}

Result<void> TakeSnapshot(const Dir& state, const RunParent& parent, const Dir& aidir, Journal& journal,
                          const std::string& name, int keep) {
  if (!IsVisibleName(name)) {
    return Fail(Kind::kLayout, "snapshot name " + Q(name) + " is not a plain directory name");
  }
  Intent intent{"snapshot", name, "copy", {{"keep", std::to_string(keep)}, {"run-parent", parent}}};
  auto w = journal.Write(intent);
  if (!w) return w;
  auto r = RunSnapshot(intent, state, aidir, journal);
  if (!r) {
    Error e = Wrap(r.error(), "snapshot " + Q(state.PathOf(parent.empty() ? "run" : parent + "/run")) +
                                  " as " + Q(name));
    if (e.hint.empty()) {
      e.hint =
          "the volume's live state is untouched; free space on the volume (or set --keep-snapshots 0 to "
          "skip snapshots) and start again";
    }
    return std::unexpected(e);
  }
  return {};
}

Result<void> RestoreSnapshot(const Dir& state, const RunParent& parent, const Dir& aidir, Journal& journal,
                             const std::string& name, const std::string& saved_as, int keep) {
  auto list = ListSnapshots(aidir);
  if (!list) return std::unexpected(list.error());
  bool found = std::any_of(list->begin(), list->end(), [&](const SnapshotInfo& s) { return s.name == name; });
  if (!found) {
    std::string names;
    for (const auto& s : *list) names += (names.empty() ? "" : ", ") + s.name;
    return Fail(Kind::kUsage, "no snapshot named " + Q(name) + " in " + Q(aidir.PathOf(kSnapshots)),
                "snapshots present: " + (names.empty() ? std::string("none") : names));
  }
  Intent intent{
      "restore",
      name,
      "copy",
      {{"saved-as", saved_as}, {"keep", std::to_string(std::max(keep, 1))}, {"run-parent", parent}}};
  auto w = journal.Write(intent);
  if (!w) return w;
  auto r = RunRestore(intent, state, aidir, journal);
  if (!r) return std::unexpected(Wrap(r.error(), "restore snapshot " + Q(name)));
  return {};
}

Result<void> ResumeSnapshotChange(const Intent& intent, const Dir& state, const Dir& aidir,
                                  Journal& journal) {
  if (intent.phase == "copy") {
    // Nothing but the partial copy exists yet: roll back. A snapshot is taken
    // again by this start if it is still due; a restore is run again by the
    // operator.
    auto snapshots = aidir.MakeSub(kSnapshots, 0700);
    if (!snapshots) return std::unexpected(snapshots.error());
    auto removed =
        intent.op == "snapshot" ? RemoveEntry(*snapshots, kPartial) : RemoveEntry(aidir, kRestorePartial);
    if (!removed) return removed;
    log::Warn("rolled back an interrupted change", {{"change", intent.op}, {"id", intent.id}});
    return journal.Clear();
  }
  log::Warn("finishing a change that was interrupted",
            {{"change", intent.op}, {"id", intent.id}, {"phase", intent.phase}});
  auto r = intent.op == "snapshot" ? RunSnapshot(intent, state, aidir, journal)
                                   : RunRestore(intent, state, aidir, journal);
  if (!r) return std::unexpected(Wrap(r.error(), "finish interrupted " + intent.op + " " + Q(intent.id)));
  return {};
}

}  // namespace agent_init
