#include "volume/migrate.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "base/fault.h"
#include "base/log.h"
#include "base/record.h"
#include "base/sys.h"
#include "base/tree.h"
#include "volume/names.h"

namespace agent_init {
namespace {

bool IsRealDir(const std::optional<struct statx>& st) { return st && S_ISDIR(st->stx_mode); }
bool IsRegular(const std::optional<struct statx>& st) { return st && S_ISREG(st->stx_mode); }
bool IsSymlink(const std::optional<struct statx>& st) { return st && S_ISLNK(st->stx_mode); }
bool SameType(const std::optional<struct statx>& a, const std::optional<struct statx>& b) {
  return a && b && (a->stx_mode & S_IFMT) == (b->stx_mode & S_IFMT);
}

// The directory `name` in `dir`, new, with the mode and (where we may set
// it) the owner of `like`, durable before anything is moved into it.
Result<void> MakeDirLike(const Dir& dir, const std::string& name, const struct statx& like) {
  if (::mkdirat(dir.fd(), name.c_str(), 0700) < 0) return SysFail(errno, "create " + Q(dir.PathOf(name)));
  auto made = dir.OpenSub(name);
  if (!made) return std::unexpected(made.error());
  ::fchown(made->fd(), like.stx_uid, like.stx_gid);
  if (::fchmod(made->fd(), like.stx_mode & 07777) < 0) return SysFail(errno, "chmod " + Q(made->path()));
  return SyncDir(dir);
}

// Phase collect: every entry of the image's run directory ends up in
// `incoming`, complete, before the image's copy is removed.
Result<void> Collect(const Dir& image_run, const Dir& aidir) {
  auto incoming = aidir.MakeSub(names::kMigrateIncoming, 0700);
  if (!incoming) return std::unexpected(incoming.error());
  // A copy cut short by a crash is incomplete: start it again. (Through the
  // opened work directory: a path of two names would let the kernel follow
  // a symlink planted at the first.)
  auto work = aidir.OpenSub(names::kMigrate);
  if (!work) return std::unexpected(work.error());
  auto cleared = RemoveEntry(*work, names::kMigratePartial);
  if (!cleared) return std::unexpected(cleared.error());
  auto entries = image_run.List();
  if (!entries) return std::unexpected(entries.error());
  bool removed_any = false;  // entries copied, whose sources were removed
  for (const auto& e : *entries) {
    const char* name = e.name.c_str();
    auto have = incoming->Stat(e.name);
    if (!have) return std::unexpected(have.error());
    if (!*have) {
      if (sys::RenameNoReplace(image_run.fd(), name, incoming->fd(), name) == 0) {
        FaultPoint("migrate collect rename");
        continue;
      }
      if (errno != EXDEV)
        return SysFail(errno, "move " + Q(image_run.PathOf(e.name)) + " to " + Q(incoming->path()));
      // Another filesystem, or a directory from an image layer (overlayfs
      // refuses to rename those): copy, make the copy durable, publish it.
      auto partial = work->MakeSub(names::kMigratePartial, 0700);
      if (!partial) return std::unexpected(partial.error());
      auto copied = CopyEntry(image_run, e.name, *partial, e.name, nullptr, CopyFrom::kImage);
      if (!copied) return std::unexpected(copied.error());
      auto synced = SyncFilesystem(*partial);
      if (!synced) return std::unexpected(synced.error());
      FaultPoint("migrate collect copy");
      if (sys::RenameNoReplace(partial->fd(), name, incoming->fd(), name) < 0) {
        return SysFail(errno, "move " + Q(partial->PathOf(e.name)) + " to " + Q(incoming->path()));
      }
      auto dsync = SyncDir(*incoming);
      if (!dsync) return std::unexpected(dsync.error());
      FaultPoint("migrate collect publish");
    }
    // The complete copy is in `incoming`; the image's entry can go.
    auto removed = RemoveEntry(image_run, e.name);
    if (!removed) return std::unexpected(removed.error());
    removed_any = true;
    FaultPoint("migrate collect remove");
  }
  // The renames into `incoming` durable before the journal moves on to
  // merge: recovery never goes back to collect, and an entry whose rename a
  // power loss undid would stay behind in the old run directory (within the
  // volume: a layout change). A rename is one change to the filesystem's
  // journal (ext4, XFS, btrfs), durable by the fsync of either directory;
  // the removals of copied entries are the image's directory's own.
  if (auto synced = SyncDir(*incoming); !synced) return synced;
  return removed_any ? SyncDir(image_run) : Result<void>{};
}

struct MergeCtx {
  const Dir& aidir;
  std::string conflicts_rel;  // .agent-init-relative directory for this id
  MigrationResult& result;
};

Result<void> Merge(const Dir& from, const Dir& into, const std::string& rel, MergeCtx& ctx, int depth) {
  if (auto deep = CheckTreeDepth(depth, "merge", from.path()); !deep) return deep;
  auto entries = from.List();
  if (!entries) return std::unexpected(entries.error());
  std::vector<std::string> copied_across;  // entries copied into `into`, whose sources go last
  for (const auto& e : *entries) {
    const char* name = e.name.c_str();
    std::string child_rel = rel.empty() ? e.name : rel + "/" + e.name;
    auto src = from.Stat(e.name);
    if (!src) return std::unexpected(src.error());
    if (!*src) continue;
    auto dst = into.Stat(e.name);
    if (!dst) return std::unexpected(dst.error());
    if (!*dst) {
      if (sys::RenameNoReplace(from.fd(), name, into.fd(), name) == 0) {
        FaultPoint("migrate merge rename");
        ++ctx.result.moved;
        continue;
      }
      if (errno != EXDEV) return SysFail(errno, "move " + Q(from.PathOf(e.name)) + " to " + Q(into.path()));
      // `into` is in another btrfs subvolume (a run directory that is one),
      // where rename moves nothing but whole subvolumes: files are copied,
      // complete at their final names before their sources go; a directory
      // is made there and merged into, as below.
      if (!IsRealDir(*src)) {
        auto copied =
            IsRegular(*src) ? PlaceFileCopy(from, e.name, into) : CopyEntry(from, e.name, into, e.name);
        if (!copied) return copied;
        copied_across.push_back(e.name);
        continue;
      }
      auto made = MakeDirLike(into, e.name, **src);
      if (!made) return made;
      dst = into.Stat(e.name);
      if (!dst) return std::unexpected(dst.error());
    }
    if (IsRealDir(*src) && IsRealDir(*dst)) {
      auto sub_from = from.OpenSub(e.name);
      if (!sub_from) return std::unexpected(sub_from.error());
      auto sub_into = into.OpenSub(e.name);
      if (!sub_into) return std::unexpected(sub_into.error());
      auto merged = Merge(*sub_from, *sub_into, child_rel, ctx, depth + 1);
      if (!merged) return merged;
      if (::unlinkat(from.fd(), name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
        return SysFail(errno, "remove " + Q(from.PathOf(e.name)));
      }
      FaultPoint("migrate merge rmdir");
      continue;
    }
    if (SameType(*src, *dst) && !IsRealDir(*src)) {
      // Symlinks and FIFOs too: a copy across subvolumes leaves both until
      // its source goes.
      auto same = IsRegular(*src)   ? SameFileContent(from, e.name, into, e.name)
                  : IsSymlink(*src) ? Result<bool>(from.ReadLink(e.name) == into.ReadLink(e.name))
                                    : Result<bool>(S_ISFIFO((*src)->stx_mode));
      if (!same) return std::unexpected(same.error());
      if (*same) {
        if (::unlinkat(from.fd(), name, 0) < 0 && errno != ENOENT) {
          return SysFail(errno, "remove " + Q(from.PathOf(e.name)));
        }
        FaultPoint("migrate merge identical");
        ++ctx.result.identical;
        continue;
      }
    }
    // Both sides hold something different: the volume's copy is the live
    // state and stays; the image's copy is kept aside, never dropped.
    size_t slash = child_rel.rfind('/');
    std::string parent_rel =
        ctx.conflicts_rel + (slash == std::string::npos ? "" : "/" + child_rel.substr(0, slash));
    auto aside = ctx.aidir.MakeSub(parent_rel, 0700);
    if (!aside) return std::unexpected(aside.error());
    if (sys::RenameNoReplace(from.fd(), name, aside->fd(), name) < 0) {
      return SysFail(errno, "move " + Q(from.PathOf(e.name)) + " to " + Q(aside->path()));
    }
    // Kept for good: the journal may be cleared before `into` is synced again.
    if (auto synced = SyncDir(*aside); !synced) return synced;
    FaultPoint("migrate merge conflict");
    std::string kept = aside->PathOf(e.name);
    log::Warn("the volume and the image both hold this state; kept the volume's copy",
              {{"path", into.PathOf(e.name)}, {"image_copy", kept}});
    ctx.result.conflicts.push_back(std::move(kept));
  }
  auto synced = SyncDir(into);
  if (!synced) return std::unexpected(synced.error());
  // The copies are durable at their final names: their sources go.
  for (const auto& name : copied_across) {
    FaultPoint("migrate merge copy");
    if (::unlinkat(from.fd(), name.c_str(), 0) < 0 && errno != ENOENT) {
      return SysFail(errno, "remove " + Q(from.PathOf(name)));
    }
    ++ctx.result.moved;
  }
  return {};
}

Result<MigrationResult> RunPhases(const Intent& start, const Dir* image_run, const Dir& state_run,
                                  Volume& volume) {
  const Dir& aidir = volume.bookkeeping();
  Journal& journal = volume.journal();
  MigrationResult result;
  Intent intent = start;
  if (intent.phase == "collect") {
    if (image_run != nullptr) {
      auto collected = Collect(*image_run, aidir);
      if (!collected) return std::unexpected(collected.error());
    }
    intent.phase = "merge";
    auto w = journal.Write(intent);
    if (!w) return std::unexpected(w.error());
  }
  if (intent.phase != "merge") {
    return Fail(Kind::kLayout, "journal " + Q(journal.Path()) + ": unknown migrate phase " + Q(intent.phase),
                "inspect the volume, then remove the journal file by hand");
  }
  auto incoming = aidir.MakeSub(names::kMigrateIncoming, 0700);
  if (!incoming) return std::unexpected(incoming.error());
  MergeCtx ctx{aidir, std::string(names::kConflicts) + "/" + intent.id, result};
  auto merged = Merge(*incoming, state_run, "", ctx, 0);
  if (!merged) return std::unexpected(merged.error());
  auto removed = RemoveEntry(aidir, names::kMigrate);
  if (!removed) return std::unexpected(removed.error());
  // A move within the volume leaves its emptied source behind: it goes
  // before the journal is cleared, so that a crash cannot leave it.
  if (auto from_rel = Lookup(intent.args, "volume-from")) {
    Layout from = *from_rel == Volume::RunRel(Layout::kState) ? Layout::kState : Layout::kRun;
    if (auto parent = volume.OpenRunParent(from); parent && ::unlinkat(parent->fd(), names::kRun, AT_REMOVEDIR) == 0) {
      if (auto synced = SyncDir(*parent); !synced) return std::unexpected(synced.error());
    }
  }
  auto cleared = journal.Clear();
  if (!cleared) return std::unexpected(cleared.error());
  return result;
}

}  // namespace

Result<MigrationResult> MigrateRun(const Dir& image_run, const Dir& state_run, Volume& volume,
                                   const std::string& id, const Record& where,
                                   const std::function<Result<void>()>& journaled) {
  const Dir& aidir = volume.bookkeeping();
  // With no unfinished migration in the journal, whatever is left in the
  // work area is not a complete copy of anything: it must not stand in for
  // the image's entries.
  auto cleared = RemoveEntry(aidir, names::kMigrate);
  if (!cleared) return std::unexpected(cleared.error());
  // The work area before the journal: the journal's fsync of this directory
  // makes the work directory's name durable with its own, and an empty work
  // area that a crash leaves without a journal is removed just above.
  if (::mkdirat(aidir.fd(), names::kMigrate, 0700) < 0) {
    return SysFail(errno, "create " + Q(aidir.PathOf(names::kMigrate)));
  }
  auto work = aidir.OpenSub(names::kMigrate);
  if (!work) return std::unexpected(work.error());
  if (auto incoming = work->MakeSub(names::kIncoming, 0700); !incoming) return std::unexpected(incoming.error());
  Intent intent{kOpMigrate, id, "collect", {{"from", image_run.path()}}};
  intent.args.insert(intent.args.end(), where.begin(), where.end());
  auto w = volume.journal().Write(intent);
  if (!w) return std::unexpected(w.error());
  if (journaled) {
    if (auto done = journaled(); !done) return std::unexpected(done.error());
  }
  auto r = RunPhases(intent, &image_run, state_run, volume);
  if (!r)
    return std::unexpected(
        Wrap(r.error(), "migrate " + Q(image_run.path()) + " into " + Q(state_run.path())));
  return r;
}

Result<MigrationResult> ResumeMigration(const Intent& intent, const Dir* image_run, const Dir& state_run,
                                        Volume& volume) {
  log::Warn("finishing a migration that was interrupted", {{"id", intent.id}, {"phase", intent.phase}});
  auto r = RunPhases(intent, image_run, state_run, volume);
  if (!r) return std::unexpected(Wrap(r.error(), "finish interrupted migration " + Q(intent.id)));
  return r;
}

}  // namespace agent_init
