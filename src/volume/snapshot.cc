#include "volume/snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "base/btrfs.h"
#include "base/clock.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/record.h"
#include "base/sys.h"
#include "base/tree.h"
#include "image/home_files.h"
#include "volume/history.h"
#include "volume/names.h"

namespace agent_init {
namespace {

using names::kRestorePartial;
using names::kRun;
using names::kSnapshotOld;
using names::kSnapshotPartial;
using names::kSnapshots;

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

// What a copy of a run directory may be, on btrfs.
enum class Into {
  kDirectory,            // a plain directory: the state layout's data/run, the agent's own directory
  kSnapshotOfSubvolume,  // a subvolume snapshot when the original is a subvolume, else a directory
  kSubvolume,            // that, or a new subvolume the copy is made into
};

// Copies `name` in `from` to `partial` in `to`, starting over from any
// earlier, interrupted copy, and makes it durable. A btrfs subvolume is
// snapshotted, as `into` allows: all of it shared at once, whatever its size.
Result<void> CopyDurably(const Dir& from, const std::string& name, const Dir& to, const std::string& partial,
                         CopyStats* stats, Into into) {
  auto cleared = RemoveEntry(to, partial);
  if (!cleared) return cleared;
  auto snapped = into == Into::kDirectory ? Result<bool>(false) : btrfs::Snapshot(from, name, to, partial);
  if (!snapped) return std::unexpected(snapped.error());
  if (*snapped) {
    if (stats) stats->subvolume = true;
  } else {
    auto made = into == Into::kSubvolume ? btrfs::MakeSubvolume(to, partial, 0700) : Result<bool>(false);
    if (!made) return std::unexpected(made.error());
    Result<void> copied;
    if (*made) {
      auto sub = to.OpenSub(partial);
      if (!sub) return std::unexpected(sub.error());
      copied = CopyDirectoryInto(from, name, *sub, stats);
    } else {
      copied = CopyEntry(from, name, to, partial, stats);
    }
    if (!copied) return copied;
  }
  auto synced = SyncFilesystem(to);
  if (!synced) return synced;
  FaultPoint("snapshot copy");
  return {};
}

// A snapshot that made the copy into a subvolume (CopyDurably) swaps it with
// the run directory, which is not one: the two are the same state, and from
// now on the run directory's snapshots cost nothing. One atomic exchange, not
// repeated once done.
Result<void> MakeRunSubvolume(const Dir& snapshots, const Dir& parent) {
  if (!btrfs::IsSubvolume(snapshots, kSnapshotPartial) || btrfs::IsSubvolume(parent, kRun)) return {};
  if (::renameat2(snapshots.fd(), kSnapshotPartial, parent.fd(), kRun, RENAME_EXCHANGE) < 0) {
    return SysFail(errno,
                   "exchange " + Q(snapshots.PathOf(kSnapshotPartial)) + " and " + Q(parent.PathOf(kRun)));
  }
  auto s1 = SyncDir(parent);
  if (!s1) return s1;
  auto s2 = SyncDir(snapshots);
  if (!s2) return s2;
  FaultPoint("snapshot publish subvolume");
  log::Info("the run directory is a btrfs subvolume from now on: its snapshots take no time",
            {{"run", parent.PathOf(kRun)}});
  return {};
}

// Phase publish of a snapshot: snapshots/.partial becomes snapshots/<name>
// (after MakeRunSubvolume, given the run directory's parent); an older <name>
// is moved to .old first and removed last. Every step can be repeated after
// a crash.
Result<void> Publish(const Dir& snapshots, const std::string& name, const Dir* subvolume_parent) {
  if (ExistsIn(snapshots, kSnapshotPartial)) {
    if (subvolume_parent) {
      auto swapped = MakeRunSubvolume(snapshots, *subvolume_parent);
      if (!swapped) return swapped;
    }
    if (ExistsIn(snapshots, name.c_str())) {
      auto cleared = RemoveEntry(snapshots, kSnapshotOld);
      if (!cleared) return cleared;
      auto moved = Rename(snapshots, name, snapshots, kSnapshotOld);
      if (!moved) return moved;
      FaultPoint("snapshot publish aside");
    }
    auto published = Rename(snapshots, kSnapshotPartial, snapshots, name);
    if (!published) return published;
    auto synced = SyncDir(snapshots);
    if (!synced) return synced;
    FaultPoint("snapshot publish");
  }
  // Gone for good before the journal moves on: after a power loss a .old
  // that came back would stay, a whole copy of the state, with no journal
  // entry left to remove it.
  if (!ExistsIn(snapshots, kSnapshotOld)) return {};
  if (auto removed = RemoveEntry(snapshots, kSnapshotOld); !removed) return removed;
  return SyncDir(snapshots);
}

// Phase swap of a restore: the current run goes to snapshots/<saved>, the
// restored copy becomes run.
Result<void> Swap(const Dir& parent, const Dir& aidir, const Dir& snapshots, const std::string& saved) {
  if (!ExistsIn(aidir, kRestorePartial)) return {};
  if (ExistsIn(parent, kRun)) {
    auto moved = Rename(parent, kRun, snapshots, saved);
    if (!moved) return moved;
    FaultPoint("restore save current");
  }
  auto restored = Rename(aidir, kRestorePartial, parent, kRun);
  if (!restored) return restored;
  auto s1 = SyncDir(parent);
  if (!s1) return s1;
  auto s2 = SyncDir(snapshots);
  if (!s2) return s2;
  FaultPoint("restore swap");
  return {};
}

// The journal records the layout as the directory that holds the run
// directory: "" (STATE) or "data".
std::string RunParentArg(Layout layout) { return layout == Layout::kState ? names::kData : ""; }

Layout LayoutOf(const Intent& intent) {
  return Lookup(intent.args, "run-parent").value_or("").empty() ? Layout::kRun : Layout::kState;
}

// Whether the snapshot makes the run directory a subvolume (TakeSnapshot).
bool SubvolumeRunFrom(const Intent& intent) { return Lookup(intent.args, "subvolume-run") == "yes"; }

int KeepFrom(const Intent& intent) {
  auto keep = Lookup(intent.args, "keep");
  return keep ? std::atoi(keep->c_str()) : 2;
}

// One journaled phase: when the change is at `phase`, runs `step`, then
// records that the change moved on to `next`.
template <class Step>
Result<void> RunPhase(Journal& journal, Intent& intent, std::string_view phase, const char* next, Step step) {
  if (intent.phase != phase) return {};
  if (auto done = step(); !done) return done;
  intent.phase = next;
  return journal.Write(intent);
}

// The last phase of both changes: `newest` (the snapshot taken, or the run
// directory a restore replaced) is recorded as the newest snapshot, then
// the snapshots beyond `keep` go. Both may run again after a crash.
Result<void> PrunePhase(const Volume& volume, const Dir& snapshots, Journal& journal, const Intent& intent,
                        const std::string& newest) {
  if (intent.phase != "prune") {
    return Fail(Kind::kLayout,
                "journal " + Q(journal.Path()) + ": unknown " + intent.op + " phase " + Q(intent.phase));
  }
  if (auto recorded = RecordNewest(snapshots, newest); !recorded) return recorded;
  return Prune(volume, KeepFrom(intent));
}

std::string Mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// A snapshot copy that failed (a full volume, most often) is undone at
// once: the partial copy would keep the volume full, and every restart
// would fail on it again. A full volume is explained: what the state takes,
// what is free, and the two ways on.
std::unexpected<Error> RollBackCopy(Error e, const Dir& parent, const Dir& snapshots, Volume& volume) {
  bool removed_partial = true;
  if (auto removed = RemoveEntry(snapshots, kSnapshotPartial); !removed) {
    removed_partial = false;
    log::Warn("could not remove the partial snapshot", {{"error", removed.error().msg}});
  } else if (auto synced = SyncDir(snapshots); !synced) {
    // Not cleared: the next start removes the copy again.
    log::Warn("could not sync the snapshots directory", {{"error", synced.error().msg}});
  } else if (auto cleared = volume.journal().Clear(); !cleared) {
    log::Warn("could not clear the journal", {{"error", cleared.error().msg}});
  }
  if (e.err != ENOSPC && e.err != EDQUOT) return std::unexpected(e);
  auto needed = SpaceUsed(parent, kRun);
  struct statvfs vfs;
  if (needed && ::fstatvfs(snapshots.fd(), &vfs) == 0) {
    e.msg += "; the state takes " + Mib(*needed) + ", the volume has " +
             Mib(static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize) + " free";
  }
  e.hint = std::string("the live state is untouched") +
           (removed_partial ? " and the partial copy removed" : "; the next start removes the partial copy") +
           "; free space on the volume (enough for one more copy of the state), or start without a snapshot: "
           "--keep-snapshots 0 (AGENT_INIT_KEEP_SNAPSHOTS=0)";
  return std::unexpected(e);
}

Result<void> RunSnapshot(Intent intent, Volume& volume, CopyStats* stats = nullptr) {
  Journal& journal = volume.journal();
  auto snapshots = volume.bookkeeping().MakeSub(kSnapshots, 0700);
  if (!snapshots) return std::unexpected(snapshots.error());
  auto copied = RunPhase(journal, intent, "copy", "publish", [&]() -> Result<void> {
    auto parent = volume.OpenRunParent(LayoutOf(intent));
    if (!parent) return std::unexpected(parent.error());
    auto done = CopyDurably(*parent, kRun, *snapshots, kSnapshotPartial, stats,
                            SubvolumeRunFrom(intent) ? Into::kSubvolume : Into::kSnapshotOfSubvolume);
    if (!done) return RollBackCopy(done.error(), *parent, *snapshots, volume);
    return done;
  });
  if (!copied) return copied;
  auto published = RunPhase(journal, intent, "publish", "prune", [&]() -> Result<void> {
    if (!SubvolumeRunFrom(intent)) return Publish(*snapshots, intent.id, nullptr);
    auto parent = volume.OpenRunParent(LayoutOf(intent));
    if (!parent) return std::unexpected(parent.error());
    return Publish(*snapshots, intent.id, &*parent);
  });
  if (!published) return published;
  if (auto pruned = PrunePhase(volume, *snapshots, journal, intent, intent.id); !pruned) return pruned;
  return journal.Clear();
}

Result<void> RunRestore(Intent intent, Volume& volume) {
  const Dir& aidir = volume.bookkeeping();
  Journal& journal = volume.journal();
  auto snapshots = aidir.MakeSub(kSnapshots, 0700);
  if (!snapshots) return std::unexpected(snapshots.error());
  std::string saved = Lookup(intent.args, "saved-as").value_or(names::kBeforeRestore);
  // The restored run directory of the run layout is a subvolume where it
  // can be, as TakeSnapshot makes it; the state layout's stays a directory.
  auto copied = RunPhase(journal, intent, "copy", "swap", [&] {
    return CopyDurably(*snapshots, intent.id, aidir, kRestorePartial, nullptr,
                       LayoutOf(intent) == Layout::kRun ? Into::kSubvolume : Into::kDirectory);
  });
  if (!copied) return copied;
  auto swapped = RunPhase(journal, intent, "swap", "prune", [&]() -> Result<void> {
    auto parent = volume.OpenRunParent(LayoutOf(intent));
    if (!parent) return std::unexpected(parent.error());
    return Swap(*parent, aidir, *snapshots, saved);
  });
  if (!swapped) return swapped;
  if (auto pruned = PrunePhase(volume, *snapshots, journal, intent, saved); !pruned) return pruned;
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

Result<SnapshotTaken> TakeSnapshot(Volume& volume, Layout layout, const std::string& name, int keep,
                                   bool subvolume_run) {
  if (!IsVisibleName(name)) {
    return Fail(Kind::kLayout, "snapshot name " + Q(name) + " is not a plain directory name");
  }
  Intent intent{
      kOpSnapshot, name, "copy", {{"keep", std::to_string(keep)}, {"run-parent", RunParentArg(layout)}}};
  if (subvolume_run && btrfs::IsBtrfs(volume.dir()) && !btrfs::IsSubvolume(volume.dir(), kRun) &&
      layout == Layout::kRun) {
    intent.args.push_back({"subvolume-run", "yes"});
  }
  SnapshotTaken taken;
  taken.filesystem = sys::FilesystemName(volume.bookkeeping().fd());
  auto start = std::chrono::steady_clock::now();
  auto w = volume.journal().Write(intent);
  if (!w) return std::unexpected(w.error());
  auto r = RunSnapshot(intent, volume, &taken.copy);
  if (!r) {
    Error e =
        Wrap(r.error(), "snapshot " + Q(volume.dir().PathOf(Volume::RunRel(layout))) + " as " + Q(name));
    if (e.hint.empty()) {
      e.hint =
          "the volume's live state is untouched; free space on the volume (or set --keep-snapshots 0 to "
          "skip snapshots) and start again";
    }
    return std::unexpected(e);
  }
  taken.elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  return taken;
}

Result<void> RestoreSnapshot(Volume& volume, Layout layout, const std::string& name,
                             const std::string& saved_as, int keep) {
  auto list = ListSnapshots(volume);
  if (!list) return std::unexpected(list.error());
  bool found = std::any_of(list->begin(), list->end(), [&](const SnapshotInfo& s) { return s.name == name; });
  if (!found) {
    // Something other than a directory under that name was planted there:
    // refused, as every symlink in the volume is, not "no such snapshot".
    if (auto snapshots = volume.bookkeeping().OpenSub(kSnapshots); snapshots && IsVisibleName(name)) {
      if (auto st = snapshots->Stat(name); st && *st) {
        return Fail(Kind::kDenied,
                    Q(SnapshotPath(volume, name)) + " is " +
                        (S_ISLNK((*st)->stx_mode) ? "a symlink" : "not a directory") +
                        ": agent-init restores only the snapshot directories it made, and follows no "
                        "symlink in the volume",
                    "remove it; `agent-init inspect` lists the snapshots");
      }
    }
    std::string names;
    for (const auto& s : *list) names += (names.empty() ? "" : ", ") + s.name;
    return Fail(Kind::kUsage, "no snapshot named " + Q(name) + " in " + Q(volume.BookkeepingPath(kSnapshots)),
                "snapshots present: " + (names.empty() ? std::string("none") : names));
  }
  Intent intent{kOpRestore,
                name,
                "copy",
                {{"saved-as", saved_as},
                 {"keep", std::to_string(std::max(keep, 1))},
                 {"run-parent", RunParentArg(layout)}}};
  auto w = volume.journal().Write(intent);
  if (!w) return w;
  auto r = RunRestore(intent, volume);
  if (!r) return std::unexpected(Wrap(r.error(), "restore snapshot " + Q(name)));
  return {};
}

Result<void> ResumeSnapshotChange(const Intent& intent, Volume& volume) {
  const Dir& aidir = volume.bookkeeping();
  if (intent.phase == "copy") {
    // Nothing but the partial copy exists yet: roll back. A snapshot is taken
    // again by this start if it is still due; a restore is run again by the
    // operator.
    auto snapshots = aidir.MakeSub(kSnapshots, 0700);
    if (!snapshots) return std::unexpected(snapshots.error());
    auto removed = intent.op == kOpSnapshot ? RemoveEntry(*snapshots, kSnapshotPartial)
                                            : RemoveEntry(aidir, kRestorePartial);
    if (!removed) return removed;
    // Gone for good before the journal is (a restore's copy is in the
    // directory of the journal, synced with it).
    if (intent.op == kOpSnapshot) {
      if (auto synced = SyncDir(*snapshots); !synced) return synced;
    }
    log::Warn("rolled back an interrupted change", {{"change", intent.op}, {"id", intent.id}});
    return volume.journal().Clear();
  }
  log::Warn("finishing a change that was interrupted",
            {{"change", intent.op}, {"id", intent.id}, {"phase", intent.phase}});
  auto r = intent.op == kOpSnapshot ? RunSnapshot(intent, volume) : RunRestore(intent, volume);
  if (!r) return std::unexpected(Wrap(r.error(), "finish interrupted " + intent.op + " " + Q(intent.id)));
  return {};
}

}  // namespace agent_init
