#include "volume/linked_run.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <climits>

#include "base/access.h"
#include "base/log.h"
#include "base/sys.h"
#include "image/image.h"
#include "volume/names.h"

namespace agent_init {
namespace {

// Whether two open directories are one.
bool SameDir(const Dir& a, const Dir& b) {
  auto x = a.StatSelf();
  auto y = b.StatSelf();
  return x && y && SameInode(*x, *y);
}

}  // namespace

Result<std::optional<Dir>> OpenLinkedRun(const Dir& vh, const std::string& link_target, const Dir& state_run,
                                         const Volume& volume) {
  const std::string shown = vh.PathOf(names::kRun);
  // Followed on purpose, once: the symlink is the old set-up's record of
  // where the state went.
  int fd = ::openat(vh.fd(), names::kRun, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR || err == ELOOP) {
      log::Warn(err == ENOENT ? "the symlink VH/run pointed at nothing; replacing it"
                              : "the symlink VH/run did not point at a directory; replacing it",
                {{"path", shown}, {"target", link_target}});
      return std::nullopt;
    }
    return std::unexpected(MakeError(Kind::kCannotPlace, err,
                                     "open " + Q(link_target) + ", which " + Q(shown) + " points at",
                                     "it may hold the agent's state: make it readable to agent-init, or move "
                                     "its content into " +
                                         Q(state_run.path()) + " and remove the symlink"));
  }
  Dir target(UniqueFd(fd), link_target);
  if (SameDir(target, state_run)) return std::nullopt;  // the volume's run directory by another path

  const std::string real = sys::RealPathOf(target.fd());
  const std::string state_real = sys::RealPathOf(volume.dir().fd());
  const std::string vh_real = sys::RealPathOf(vh.fd());
  if (real.empty() || state_real.empty() || vh_real.empty()) {
    return Fail(
        Kind::kLayout,
        "cannot tell where " + Q(shown) + " (a symlink to " + Q(link_target) +
            ") leads: /proc/self/fd is not readable; agent-init will not move what it cannot place",
        "mount /proc, or move the state into " + Q(state_run.path()) + " yourself and remove the symlink");
  }
  std::string whose;
  if (PathWithin(state_real, real)) {
    whose = "the state volume " + Q(volume.path()) + (real == state_real ? "" : " (it is above it)");
  } else if (PathWithin(real, state_real)) {
    whose = "inside the state volume " + Q(volume.path()) + " (not its run directory)";
  } else if (PathWithin(vh_real, real)) {
    whose = "the versioned home " + Q(vh.path()) + " or a directory above it";
  }
  if (!whose.empty()) {
    return Fail(Kind::kLayout,
                Q(shown) + " is a symlink to " + Q(link_target) + ", which is " + whose +
                    ": agent-init will not move that into " + Q(state_run.path()),
                "move the agent's state (what its run directory held) into " + Q(state_run.path()) +
                    " yourself, remove the symlink, and start again");
  }

  auto entries = target.List();
  if (!entries) return std::unexpected(entries.error());
  if (entries->empty()) {
    log::Info("the symlink VH/run pointed at an empty directory; replacing it",
              {{"path", shown}, {"target", link_target}});
    return std::nullopt;
  }
  struct statvfs vfs;
  if (::fstatvfs(target.fd(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) {
    return Fail(Kind::kCannotPlace,
                Q(shown) + " is a symlink to " + Q(link_target) +
                    ", which holds files but is read-only: agent-init cannot move them into the volume",
                "mount it read-write for one start, or copy its content into " + Q(state_run.path()) +
                    " and remove the symlink");
  }
  if (!MayChange(target)) {
    return std::unexpected(
        ExplainImageDenial(MakeError(Kind::kDenied, EACCES,
                                     "move the state in " + Q(link_target) + " (where " + Q(shown) +
                                         " points) into " + Q(state_run.path())),
                           link_target));
  }
  return std::optional<Dir>(std::move(target));
}

}  // namespace agent_init
