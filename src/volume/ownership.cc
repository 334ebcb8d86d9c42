#include "volume/ownership.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "base/atomic_file.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/record.h"
#include "base/sys.h"
#include "base/tree.h"
#include "volume/names.h"

namespace agent_init {
namespace {

struct Walk {
  uid_t uid;
  gid_t gid;
  struct statx top;  // the walk stays on this one's mount
  Privileged& ops;
  std::uint64_t changed = 0;
};

// One entry of the walk, opened once without following a symlink (O_PATH
// opens any kind of file, and nothing is read or run by it). Its type, links,
// mount and owner come from the fd, and the chown goes through the fd: an
// entry swapped by name after the open (a directory for a hard link to a
// root-only file) changes nothing that is done.
struct Entry {
  UniqueFd fd;
  struct statx st;
};

Result<std::optional<Entry>> OpenEntry(int dirfd, const std::string& name, const std::string& shown) {
  int fd = ::openat(dirfd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<Entry>{};
    return SysFail(errno, "open " + Q(shown));
  }
  Entry e{UniqueFd(fd), {}};
  if (sys::Statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, &e.st) < 0) return SysFail(errno, "stat " + Q(shown));
  return std::optional<Entry>{std::move(e)};
}

Result<void> ChownFd(int fd, const std::string& shown, const struct statx& st, Walk& w) {
  if (st.stx_uid == w.uid && st.stx_gid == w.gid) return {};
  if (w.ops.Chown(fd, "", w.uid, w.gid, AT_EMPTY_PATH) < 0) return SysFail(errno, "chown " + Q(shown));
  ++w.changed;
  return {};
}

// A hard link can make a file outside the volume appear inside it; the
// agent's state has none, so it is left to the operator.
bool SkipLinked(const struct statx& st, const std::string& shown) {
  if (S_ISDIR(st.stx_mode) || st.stx_nlink <= 1) return false;
  log::Warn("not changing the owner of a file with several hard links", {{"path", shown}});
  return true;
}

Result<void> ChownBelow(const Dir& dir, Walk& w, int depth) {
  if (auto deep = CheckTreeDepth(depth, "chown", dir.path()); !deep) return deep;
  auto entries = dir.List();
  if (!entries) return std::unexpected(entries.error());
  for (const auto& e : *entries) {
    const std::string shown = dir.PathOf(e.name);
    auto opened = OpenEntry(dir.fd(), e.name, shown);
    if (!opened) return std::unexpected(opened.error());
    if (!*opened) continue;
    const auto& [fd, st] = **opened;
    if (!sys::SameMount(st, w.top)) continue;  // another mount: not ours
    if (SkipLinked(st, shown)) continue;
    if (S_ISDIR(st.stx_mode)) {
      // The directory the fd holds, opened for reading through it.
      int sub = ::openat(fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (sub < 0) return SysFail(errno, "open " + Q(shown));
      auto below = ChownBelow(Dir(UniqueFd(sub), shown), w, depth + 1);
      if (!below) return below;
      TestHook("chown walked below", shown);
    }
    auto changed = ChownFd(fd.get(), shown, st, w);
    if (!changed) return changed;
  }
  return {};
}

// The chown walk is skipped on restarts: a marker records the ids the whole
// tree was last given, and agent-init's own new files are handed over below.
Result<void> WriteChownedMarker(const Dir& aidir, Ids user) {
  return WriteFileAtomic(
      aidir, names::kChowned,
      EncodeRecord({{"uid", std::to_string(user.uid)}, {"gid", std::to_string(user.gid)}}));
}

bool ChownedMarkerMatches(const Dir& aidir, Ids user) {
  auto text = aidir.ReadSmallFile(names::kChowned, 1024);
  if (!text || !*text) return false;
  auto r = DecodeRecord(**text);
  return r && Lookup(*r, "uid") == std::to_string(user.uid) && Lookup(*r, "gid") == std::to_string(user.gid);
}

}  // namespace

Result<std::uint64_t> ChownTree(const Dir& dir, uid_t uid, gid_t gid, Privileged& ops) {
  auto self = dir.StatSelf();
  if (!self) return std::unexpected(self.error());
  Walk w{uid, gid, *self, ops};
  auto below = ChownBelow(dir, w, 0);
  if (!below) return std::unexpected(below.error());
  auto top = ChownFd(dir.fd(), dir.path(), *self, w);
  if (!top) return std::unexpected(top.error());
  return w.changed;
}

Result<void> HandOverEntries(const Dir& dir, const std::vector<std::string>& names, Ids user, Privileged& ops) {
  for (const auto& name : names) {
    const std::string shown = dir.PathOf(name);
    auto opened = OpenEntry(dir.fd(), name, shown);
    if (!opened) return std::unexpected(opened.error());
    if (!*opened) continue;
    const auto& [fd, st] = **opened;
    if (S_ISDIR(st.stx_mode)) {
      int sub = ::openat(fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (sub < 0) return SysFail(errno, "open " + Q(shown));
      auto changed = ChownTree(Dir(UniqueFd(sub), shown), user.uid, user.gid, ops);
      if (!changed) return std::unexpected(changed.error());
      continue;
    }
    if (SkipLinked(st, shown)) continue;
    Walk w{user.uid, user.gid, st, ops};
    if (auto changed = ChownFd(fd.get(), shown, st, w); !changed) return changed;
  }
  return {};
}

Result<void> HandOver(const Volume& volume, const std::vector<const Dir*>& trees,
                      const std::vector<const Dir*>& tops, Ids user, bool force_walk, Privileged& ops) {
  const Dir& aidir = volume.bookkeeping();
  if (force_walk || !ChownedMarkerMatches(aidir, user)) {
    std::vector<const Dir*> walk = trees;
    walk.push_back(&aidir);
    for (const Dir* dir : walk) {
      auto changed = ChownTree(*dir, user.uid, user.gid, ops);
      if (!changed) return std::unexpected(Wrap(changed.error(), "hand the state to --user"));
      if (*changed > 0) {
        log::Info("changed owner", {{"path", dir->path()},
                                    {"entries", std::to_string(*changed)},
                                    {"owner", std::to_string(user.uid) + ":" + std::to_string(user.gid)}});
      }
    }
    // The owners on the disk before the marker that says so: a power loss
    // must not keep the marker and lose the chowns, which the next start
    // would then never make.
    if (auto synced = SyncFilesystem(aidir); !synced) return synced;
    auto marked = WriteChownedMarker(aidir, user);
    if (!marked) return marked;
  }
  // The directories the agent writes into, checked at every start: one
  // recreated since the last walk (an operator's rm -rf) is root's otherwise.
  for (const Dir* dir : tops) {
    struct stat st;
    if (::fstat(dir->fd(), &st) < 0) return SysFail(errno, "stat " + Q(dir->path()));
    if ((st.st_uid != user.uid || st.st_gid != user.gid) &&
        ops.Chown(dir->fd(), "", user.uid, user.gid, AT_EMPTY_PATH) < 0) {
      return SysFail(errno, "chown " + Q(dir->path()));
    }
  }
  // Files agent-init (re)wrote as root on this start, chowned through an fd
  // of the very file: one with several names is refused, never handed over.
  for (const char* name : {names::kLock, names::kOwner, names::kHistory, names::kChowned}) {
    const std::string shown = aidir.PathOf(name);
    auto opened = OpenEntry(aidir.fd(), name, shown);
    if (!opened) return std::unexpected(opened.error());
    if (!*opened) continue;
    const auto& [fd, st] = **opened;
    if (!S_ISREG(st.stx_mode)) {
      return Fail(Kind::kLayout, "refusing " + Q(shown) + ": expected a regular file",
                  "remove it; agent-init recreates the files it owns");
    }
    if (st.stx_nlink > 1) return std::unexpected(HardLinkRefusal(shown, st.stx_nlink));
    Walk w{user.uid, user.gid, st, ops};
    if (auto changed = ChownFd(fd.get(), shown, st, w); !changed) return changed;
  }
  return {};
}

}  // namespace agent_init
