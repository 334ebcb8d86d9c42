#include "volume/ownership.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/sys.h"
#include "base/tree.h"

namespace agent_init {
namespace {

struct Walk {
  uid_t uid;
  gid_t gid;
  std::uint64_t mount_id;
  std::uint64_t changed = 0;
};

Result<void> ChownEntry(int dirfd, const std::string& name, const std::string& shown, const struct statx& st,
                        Walk& w) {
  if (st.stx_uid == w.uid && st.stx_gid == w.gid) return {};
  if (::fchownat(dirfd, name.c_str(), w.uid, w.gid,
                 AT_SYMLINK_NOFOLLOW | (name.empty() ? AT_EMPTY_PATH : 0)) < 0) {
    return SysFail(errno, "chown " + Q(shown));
  }
  ++w.changed;
  return {};
}

Result<void> ChownBelow(const Dir& dir, Walk& w, int depth) {
  if (depth >= kMaxTreeDepth) {
    return Fail(Kind::kCannotPlace, "chown " + Q(dir.path()) + ": nested deeper than " +
                                        std::to_string(kMaxTreeDepth) + " levels; refusing");
  }
  auto entries = dir.List();
  if (!entries) return std::unexpected(entries.error());
  for (const auto& e : *entries) {
    struct statx st;
    if (sys::Statx(dir.fd(), e.name.c_str(), AT_SYMLINK_NOFOLLOW, &st) < 0) {
      if (errno == ENOENT) continue;
      return SysFail(errno, "stat " + Q(dir.PathOf(e.name)));
    }
    if (sys::HasMountId(st) && st.stx_mnt_id != w.mount_id) continue;  // another mount: not ours
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

}  // namespace

Result<std::uint64_t> ChownTree(const Dir& dir, uid_t uid, gid_t gid) {
  auto self = dir.StatSelf();
  if (!self) return std::unexpected(self.error());
  Walk w{uid, gid, self->stx_mnt_id};
  auto below = ChownBelow(dir, w, 0);
  if (!below) return std::unexpected(below.error());
  auto top = ChownEntry(dir.fd(), "", dir.path(), *self, w);
  if (!top) return std::unexpected(top.error());
  return w.changed;
}

}  // namespace agent_init
