#include "volume/placement.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstring>

#include "base/access.h"
#include "base/enum_names.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/sys.h"
#include "base/tree.h"
#include "image/image.h"
#include "volume/linked_run.h"
#include "volume/names.h"

namespace agent_init {
namespace {

std::string ReadOnlyHint() {
  return "the image's filesystem is read-only and agent-init may not mount here: grant mount "
         "permission (CAP_SYS_ADMIN; with AppArmor also an unconfined profile) so that it can "
         "bind-mount, or give the agent a writable copy of its data directory (see README, "
         "read-only root filesystems)";
}

Result<void> Bind(const Dir& vh, const Dir& state_run, bool& created_dir, Privileged& ops) {
  created_dir = false;
  if (::mkdirat(vh.fd(), names::kRun, 0770) == 0) {
    created_dir = true;
  } else if (errno != EEXIST) {
    int err = errno;
    return std::unexpected(MakeError(Kind::kCannotPlace, err,
                                     "create mount point " + Q(vh.PathOf(names::kRun)),
                                     err == EROFS ? ReadOnlyHint() : ""));
  }
  int target = ::openat(vh.fd(), names::kRun, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (target < 0) return SysFail(errno, "open mount point " + Q(vh.PathOf(names::kRun)));
  UniqueFd target_fd(target);
  int new_api_err = 0;
  if (BindFds(ops, state_run.fd(), target_fd.get(), BindDepth::kOne, new_api_err) < 0) {
    int err = errno;
    Error e = MakeError(Kind::kCannotPlace, err,
                        "bind-mount " + Q(state_run.path()) + " on " + Q(vh.PathOf(names::kRun)));
    if (new_api_err != 0)
      e.msg += std::string(" (open_tree, move_mount: ") + std::strerror(new_api_err) + ")";
    return std::unexpected(e);
  }
  FaultPoint("place bind");
  return {};
}

Result<void> Link(const Dir& vh, const RunStatus& status, const std::string& link_target) {
  // The image's directory (emptied by the migration) goes first; a symlink
  // cannot be renamed over a directory.
  if (status.kind == RunStatus::Kind::kImageDir) {
    if (::unlinkat(vh.fd(), names::kRun, AT_REMOVEDIR) < 0 && errno != ENOENT) {
      int err = errno;
      return std::unexpected(MakeError(Kind::kCannotPlace, err,
                                       "remove the image's " + Q(vh.PathOf(names::kRun)),
                                       err == EROFS ? ReadOnlyHint() : ""));
    }
  }
  if (::symlinkat(link_target.c_str(), vh.fd(), names::kRun) < 0) {
    int err = errno;
    return std::unexpected(MakeError(Kind::kCannotPlace, err,
                                     "create symlink " + Q(vh.PathOf(names::kRun)) + " -> " + Q(link_target),
                                     err == EROFS ? ReadOnlyHint() : ""));
  }
  FaultPoint("place symlink");
  return {};
}

void LogMigration(const char* what, const Dir& from, const Dir& to, const MigrationResult& m) {
  log::Info(what, {{"from", from.path()},
                   {"to", to.path()},
                   {"moved", std::to_string(m.moved)},
                   {"identical", std::to_string(m.identical)},
                   {"conflicts", std::to_string(m.conflicts.size())}});
}

bool NotPermitted(int err) { return err == EPERM || err == EACCES; }

}  // namespace

std::string_view PlacementName(Placement placement) {
  static constexpr EnumName<Placement> kNames[] = {
      {Placement::kNone, "none"},
      {Placement::kBind, "bind"},
      {Placement::kSymlink, "symlink"},
  };
  return NameOf(placement, kNames);
}

Result<RunStatus> ExamineRun(const Dir& vh, const Dir* state_run, const std::string& link_target) {
  RunStatus status;
  auto st = vh.Stat(names::kRun);
  if (!st) return std::unexpected(st.error());
  if (!*st) return status;
  if (S_ISLNK((*st)->stx_mode)) {
    status.link_target = vh.ReadLink(names::kRun).value_or("");
    // A relative target is relative to the directory holding the link.
    std::string target =
        status.link_target.starts_with('/') ? status.link_target : vh.path() + "/" + status.link_target;
    bool same = NormalizePath(target) == NormalizePath(link_target);
    status.kind = same ? RunStatus::Kind::kLinked : RunStatus::Kind::kOtherSymlink;
    return status;
  }
  if (!S_ISDIR((*st)->stx_mode)) {
    status.kind = RunStatus::Kind::kOther;
    return status;
  }
  if (state_run != nullptr && state_run->valid()) {
    // A bind mount shows the volume's inode at VH/run (the stat above
    // crossed into the mount).
    auto there = state_run->StatSelf();
    if (there && SameInode(**st, *there)) {
      status.kind = RunStatus::Kind::kBound;
      return status;
    }
  }
  status.kind = RunStatus::Kind::kImageDir;
  auto run = vh.OpenSub(names::kRun);
  if (!run) return std::unexpected(run.error());
  auto entries = run->List();
  if (!entries) return std::unexpected(entries.error());
  status.has_entries = !entries->empty();
  return status;
}

Result<PlaceOutcome> PlaceRun(Method method, const Dir& vh, const Dir& state_run, Volume& volume,
                              const std::string& migration_id, Privileged& ops) {
  const std::string link_target = volume.RunPath(Layout::kRun);
  PlaceOutcome out;
  auto status = ExamineRun(vh, &state_run, link_target);
  if (!status) return std::unexpected(status.error());
  if (status->placed()) {
    out.placement = status->placement();
    return out;
  }
  if (status->kind == RunStatus::Kind::kOther) {
    return Fail(Kind::kLayout, Q(vh.PathOf(names::kRun)) + " is neither a directory nor a symlink",
                "the image is broken; remove the file or rebuild the image");
  }
  out.changed = true;

  // Not root (the image's own user): whether it may change the image is found
  // out before anything moves, so that a refused start changes nothing.
  const bool changes_vh = method == Method::kSymlink || !ops.HasMountCapability() ||
                          status->kind == RunStatus::Kind::kAbsent ||
                          status->kind == RunStatus::Kind::kOtherSymlink;
  if (changes_vh && !MayChange(vh)) {
    return std::unexpected(ExplainImageDenial(
        MakeError(Kind::kDenied, EACCES,
                  "replace " + Q(vh.PathOf(names::kRun)) + " with a symlink to " + Q(link_target)),
        vh.path()));
  }

  // A symlink to somewhere else (an older configuration, an image that ships
  // one) is agent-init's to replace, whatever the method; what it pointed
  // at moves into the volume first.
  if (status->kind == RunStatus::Kind::kOtherSymlink) {
    auto held = OpenLinkedRun(vh, status->link_target, state_run, volume);
    if (!held) return std::unexpected(held.error());
    if (*held) {
      auto migrated = MigrateRun(**held, state_run, volume, migration_id);
      if (!migrated) return std::unexpected(migrated.error());
      LogMigration("moved the state that the symlink VH/run pointed at into the volume", **held, state_run,
                   *migrated);
      out.migration = std::move(*migrated);
    }
    if (::unlinkat(vh.fd(), names::kRun, 0) < 0 && errno != ENOENT) {
      int err = errno;
      return std::unexpected(MakeError(Kind::kCannotPlace, err,
                                       "remove stale symlink " + Q(vh.PathOf(names::kRun)),
                                       err == EROFS ? ReadOnlyHint() : ""));
    }
    log::Info("replaced a symlink that pointed elsewhere",
              {{"path", vh.PathOf(names::kRun)}, {"was", status->link_target}});
    status->kind = RunStatus::Kind::kAbsent;
  }

  if (status->kind == RunStatus::Kind::kImageDir && status->has_entries) {
    auto image_run = vh.OpenSub(names::kRun);
    if (!image_run) return std::unexpected(image_run.error());
    struct statvfs vfs;
    if (::fstatvfs(image_run->fd(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) {
      // Nothing can have been written there at run time: it is the image's
      // own content, which a bind mount covers and a symlink cannot replace.
      log::Debug("the image's run directory is read-only; not migrating it", {{"path", image_run->path()}});
    } else if (!MayChange(*image_run)) {
      return std::unexpected(ExplainImageDenial(
          MakeError(Kind::kDenied, EACCES,
                    "move the image's state in " + Q(image_run->path()) + " into " + Q(state_run.path())),
          image_run->path()));
    } else {
      auto migrated = MigrateRun(*image_run, state_run, volume, migration_id);
      if (!migrated) return std::unexpected(migrated.error());
      LogMigration("moved the image's run directory into the volume", *image_run, state_run, *migrated);
      out.migration = std::move(*migrated);
    }
  }

  if (method == Method::kAuto || method == Method::kBind) {
    bool created = false;
    auto bound = Bind(vh, state_run, created, ops);
    if (bound) {
      out.placement = Placement::kBind;
      return out;
    }
    if (method == Method::kBind || !NotPermitted(bound.error().err)) {
      Error e = bound.error();
      if (method == Method::kBind && NotPermitted(e.err) && e.hint.empty()) {
        e.hint =
            "mounting is not permitted here: grant CAP_SYS_ADMIN (and an unconfined AppArmor "
            "profile), or use --method auto or symlink";
      }
      return std::unexpected(e);
    }
    log::Info("bind mount not permitted here; using a symlink instead",
              {{"path", vh.PathOf(names::kRun)}, {"error", bound.error().msg}});
    if (created) {
      ::unlinkat(vh.fd(), names::kRun, AT_REMOVEDIR);
      status->kind = RunStatus::Kind::kAbsent;
    }
  }
  auto linked = Link(vh, *status, link_target);
  if (!linked) return std::unexpected(linked.error());
  out.placement = Placement::kSymlink;
  return out;
}

}  // namespace agent_init
