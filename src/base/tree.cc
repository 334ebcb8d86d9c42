#include "base/tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "base/btrfs.h"
#include "base/fault.h"
#include "base/sys.h"

namespace agent_init {
namespace {

Result<void> RemoveNode(int dirfd, const std::string& name, const std::string& shown, int depth) {
  if (::unlinkat(dirfd, name.c_str(), 0) == 0) return {};
  int err = errno;
  if (err == ENOENT) return {};
  if (err != EISDIR && err != EPERM) return SysFail(err, "remove " + Q(shown));
  // A directory (EISDIR on Linux; EPERM on some filesystems).
  if (auto deep = CheckTreeDepth(depth, "remove", shown); !deep) return deep;
  int fd = OpenDirNoFollow(dirfd, name.c_str());
  if (fd < 0) {
    if (errno == ENOTDIR) return SysFail(err, "remove " + Q(shown));
    return std::unexpected(RefusalFor(errno, dirfd, name, shown));
  }
  Dir d(UniqueFd(fd), shown);
  // A btrfs snapshot goes at once where we may delete subvolumes.
  if (btrfs::IsSubvolumeRoot(d.fd()) && btrfs::Destroy(dirfd, name)) return {};
  auto entries = d.List();
  if (!entries) return std::unexpected(entries.error());
  for (const auto& e : *entries) {
    auto r = RemoveNode(d.fd(), e.name, d.PathOf(e.name), depth + 1);
    if (!r) return r;
  }
  if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) < 0 && errno != ENOENT) {
    return SysFail(errno, "remove directory " + Q(shown));
  }
  return {};
}

Result<std::uint64_t> SpaceOf(int dirfd, const std::string& name, const std::string& shown, int depth) {
  struct stat st;
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
    if (errno == ENOENT) return 0;
    return SysFail(errno, "stat " + Q(shown));
  }
  std::uint64_t total = static_cast<std::uint64_t>(st.st_blocks) * 512;
  if (!S_ISDIR(st.st_mode)) return total;
  if (auto deep = CheckTreeDepth(depth, "measure", shown); !deep) return std::unexpected(deep.error());
  int fd = OpenDirNoFollow(dirfd, name.c_str());
  if (fd < 0) return std::unexpected(RefusalFor(errno, dirfd, name, shown));
  Dir d(UniqueFd(fd), shown);
  auto entries = d.List();
  if (!entries) return std::unexpected(entries.error());
  for (const auto& e : *entries) {
    auto below = SpaceOf(d.fd(), e.name, d.PathOf(e.name), depth + 1);
    if (!below) return below;
    total += *below;
  }
  return total;
}

}  // namespace

Result<std::uint64_t> SpaceUsed(const Dir& dir, const std::string& name) {
  return SpaceOf(dir.fd(), name, dir.PathOf(name), 0);
}

Result<void> CheckTreeDepth(int depth, std::string_view verb, const std::string& path) {
  if (depth < kMaxTreeDepth) return {};
  return Fail(Kind::kCannotPlace, std::string(verb) + " " + Q(path) + ": nested deeper than " +
                                      std::to_string(kMaxTreeDepth) + " levels; refusing");
}

Result<void> RemoveEntry(const Dir& dir, const std::string& name) {
  return RemoveNode(dir.fd(), name, dir.PathOf(name), 0);
}

Result<bool> SameFileContent(const Dir& dir_a, const std::string& a, const Dir& dir_b, const std::string& b) {
  auto fa = dir_a.OpenFile(a, O_RDONLY);
  if (!fa) return std::unexpected(fa.error());
  auto fb = dir_b.OpenFile(b, O_RDONLY);
  if (!fb) return std::unexpected(fb.error());
  struct stat sa, sb;
  if (::fstat(fa->get(), &sa) < 0) return SysFail(errno, "stat " + Q(dir_a.PathOf(a)));
  if (::fstat(fb->get(), &sb) < 0) return SysFail(errno, "stat " + Q(dir_b.PathOf(b)));
  if (sa.st_size != sb.st_size) return false;
  std::vector<char> ba(1 << 16), bb(1 << 16);
  for (;;) {
    ssize_t na = ::read(fa->get(), ba.data(), ba.size());
    if (na < 0) return SysFail(errno, "read " + Q(dir_a.PathOf(a)));
    ssize_t got = 0;
    while (got < na) {
      ssize_t nb = ::read(fb->get(), bb.data() + got, static_cast<size_t>(na - got));
      if (nb < 0) return SysFail(errno, "read " + Q(dir_b.PathOf(b)));
      if (nb == 0) return false;
      got += nb;
    }
    if (na == 0) {
      char extra;
      return ::read(fb->get(), &extra, 1) == 0;
    }
    if (std::memcmp(ba.data(), bb.data(), static_cast<size_t>(na)) != 0) return false;
  }
}

namespace {

Result<bool> SameTreeAt(const Dir& a, const Dir& b, int depth) {
  if (auto deep = CheckTreeDepth(depth, "compare", a.path()); !deep) return std::unexpected(deep.error());
  auto ea = a.List();
  if (!ea) return std::unexpected(ea.error());
  auto eb = b.List();
  if (!eb) return std::unexpected(eb.error());
  if (ea->size() != eb->size()) return false;
  for (const auto& e : *ea) {
    auto sa = a.Stat(e.name);
    if (!sa) return std::unexpected(sa.error());
    auto sb = b.Stat(e.name);
    if (!sb) return std::unexpected(sb.error());
    if (!*sa || !*sb) return false;
    const mode_t type = (*sa)->stx_mode & S_IFMT;
    if (type != ((*sb)->stx_mode & S_IFMT)) return false;
    Result<bool> same = true;
    if (type == S_IFREG) {
      same = SameFileContent(a, e.name, b, e.name);
    } else if (type == S_IFLNK) {
      same = a.ReadLink(e.name) == b.ReadLink(e.name);
    } else if (type == S_IFDIR) {
      auto da = a.OpenSub(e.name);
      if (!da) return std::unexpected(da.error());
      auto db = b.OpenSub(e.name);
      if (!db) return std::unexpected(db.error());
      same = SameTreeAt(*da, *db, depth + 1);
    }
    if (!same || !*same) return same;
  }
  return true;
}

}  // namespace

Result<bool> SameTree(const Dir& a, const Dir& b) { return SameTreeAt(a, b, 0); }

Result<void> SyncFilesystem(const Dir& dir) {
  // A test build's power-loss sweep shows that it catches this one missing.
  if (TestSwitch("WITHOUT_SYNCFS")) return {};
  if (::syncfs(dir.fd()) < 0) return SysFail(errno, "sync filesystem of " + Q(dir.path()));
  AnnounceSyncfs(dir.fd());
  return {};
}

Result<void> SyncDir(const Dir& dir) {
  if (sys::Fsync(dir.fd()) < 0 && errno != EINVAL) return SysFail(errno, "sync " + Q(dir.path()));
  return {};
}

}  // namespace agent_init
