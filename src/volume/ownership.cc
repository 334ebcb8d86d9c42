#include "volume/ownership.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic_file.h"
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

Result<void> ChownEntry(int dirfd, const std::string& name, const std::string& shown, const struct statx& st,
                        Walk& w) {
  if (st.stx_uid == w.uid && st.stx_gid == w.gid) return {};
  if (w.ops.Chown(dirfd, name.c_str(), w.uid, w.gid,
                  AT_SYMLINK_NOFOLLOW | (name.empty() ? AT_EMPTY_PATH : 0)) < 0) {
    return SysFail(errno, "chown " + Q(shown));
  }
  ++w.changed;
  return {};
}

Result<void> ChownBelow(const Dir& dir, Walk& w, int depth) {
  if (auto deep = CheckTreeDepth(depth, "chown", dir.path()); !deep) return deep;
  auto entries = dir.List();
  if (!entries) return std::unexpected(entries.error());
  for (const auto& e : *entries) {
    struct statx st;
    if (sys::Statx(dir.fd(), e.name.c_str(), AT_SYMLINK_NOFOLLOW, &st) < 0) {
      if (errno == ENOENT) continue;
      return SysFail(errno, "stat " + Q(dir.PathOf(e.name)));
    }
    if (!sys::SameMount(st, w.top)) continue;  // another mount: not ours
    if (!S_ISDIR(st.stx_mode) && st.stx_nlink > 1) {
      // A hard link can make a file outside the volume appear inside it;
      // the agent's state has none, so leave it to the operator.
      log::Warn("not changing the owner of a file with several hard links", {{"path", dir.PathOf(e.name)}});
      continue;
    }
    if (S_ISDIR(st.stx_mode)) {
      auto sub = dir.OpenSub(e.name);
      if (!sub) return std::unexpected(sub.error());
      auto below = ChownBelow(*sub, w, depth + 1);
      if (!below) return below;
    }
    auto changed = ChownEntry(dir.fd(), e.name, dir.PathOf(e.name), st, w);
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
  auto top = ChownEntry(dir.fd(), "", dir.path(), *self, w);
  if (!top) return std::unexpected(top.error());
  return w.changed;
}

Result<void> HandOverEntries(const Dir& dir, const std::vector<std::string>& names, Ids user, Privileged& ops) {
  for (const auto& name : names) {
    auto st = dir.Stat(name);
    if (!st) return std::unexpected(st.error());
    if (!*st) continue;
    if (S_ISDIR((*st)->stx_mode)) {
      auto sub = dir.OpenSub(name);
      if (!sub) return std::unexpected(sub.error());
      auto changed = ChownTree(*sub, user.uid, user.gid, ops);
      if (!changed) return std::unexpected(changed.error());
      continue;
    }
    if ((*st)->stx_nlink > 1 && !S_ISDIR((*st)->stx_mode)) continue;
    if (ops.Chown(dir.fd(), name.c_str(), user.uid, user.gid, AT_SYMLINK_NOFOLLOW) < 0)
      return SysFail(errno, "chown " + Q(dir.PathOf(name)));
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
  // Files agent-init (re)wrote as root on this start.
  for (const char* name : {names::kLock, names::kOwner, names::kHistory, names::kChowned}) {
    if (ops.Chown(aidir.fd(), name, user.uid, user.gid, AT_SYMLINK_NOFOLLOW) < 0 && errno != ENOENT) {
      return SysFail(errno, "chown " + Q(aidir.PathOf(name)));
    }
  }
  return {};
}

}  // namespace agent_init
