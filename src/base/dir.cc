#include "base/dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include <vector>

#include "base/fault.h"
#include "base/sys.h"

namespace agent_init {
namespace {

// Splits "a/b/c" into components; std::nullopt when any component is not a
// plain name (empty, ".", "..") or the path is absolute.
std::optional<std::vector<std::string_view>> SplitRelative(std::string_view rel) {
  std::vector<std::string_view> parts;
  if (rel.empty() || rel.front() == '/') return std::nullopt;
  size_t start = 0;
  while (start <= rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string_view::npos) end = rel.size();
    std::string_view part = rel.substr(start, end - start);
    if (!IsPlainName(part)) return std::nullopt;
    parts.push_back(part);
    start = end + 1;
  }
  return parts;
}

std::string Join(const std::string& base, std::string_view rel) {
  if (rel.empty()) return base;
  std::string out = base;
  if (out.empty() || out.back() != '/') out += '/';
  out += rel;
  return out;
}

}  // namespace

bool IsPlainName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos;
}

bool IsVisibleName(std::string_view name) { return IsPlainName(name) && name.front() != '.'; }

bool PathWithin(std::string_view inner, std::string_view outer) {
  auto trim = [](std::string_view p) {
    while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
    return p;
  };
  inner = trim(inner);
  outer = trim(outer);
  if (inner.empty() || outer.empty() || inner.front() != '/' || outer.front() != '/') return false;
  if (outer == "/" || inner == outer) return true;
  return inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '/';
}

std::string NormalizePath(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = end + 1;
  }
  std::string out;
  for (auto part : parts) {
    out += '/';
    out += part;
  }
  return out.empty() ? "/" : out;
}

namespace {
// Whether openat2(2) answers here: not below Linux 5.6, nor under a seccomp
// profile that predates it (ENOSYS or EPERM), nor under qemu-user 7.
std::atomic<bool> g_openat2{true};
}  // namespace

int OpenDirNoFollow(int dirfd, const char* name) {
  if (g_openat2.load(std::memory_order_relaxed)) {
    // No O_NOFOLLOW: with it a symlink is ENOTDIR, as a file is. Refused by
    // RESOLVE_NO_SYMLINKS instead, it is ELOOP, told apart in the one look.
    struct open_how how {};
    how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS;
    long fd = ::syscall(SYS_openat2, dirfd, name, &how, sizeof how);
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) {
      if (fd < 0) {
        int err = errno;
        TestHook("directory open refused", name);
        errno = err;
      }
      return static_cast<int>(fd);
    }
    g_openat2.store(false, std::memory_order_relaxed);
  }
  int fd = ::openat(dirfd, name, kDirNoFollow);
  if (fd < 0) {
    int err = errno;
    TestHook("directory open refused", name);
    errno = err;
  }
  return fd;
}

Error RefusalFor(int err, int dirfd, const std::string& name, const std::string& path) {
  if (err == ENOTDIR && !g_openat2.load(std::memory_order_relaxed)) {
    // openat(O_DIRECTORY | O_NOFOLLOW) said ENOTDIR for a symlink and a file
    // alike: only a second look tells them apart. What it finds may have
    // changed since; a directory there now means the entry was swapped
    // while it was opened, which is refused as the race it is.
    struct stat st;
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISLNK(st.st_mode)) err = ELOOP;
      if (S_ISDIR(st.st_mode)) {
        return MakeError(Kind::kDenied, 0,
                         "refusing " + Q(path) + ": it changed while agent-init opened it (not a directory, "
                                                 "then a directory)",
                         "something else is swapping entries in the state volume: stop it, then start again");
      }
    }
  }
  switch (err) {
    case ELOOP:
      return MakeError(Kind::kDenied, 0, "refusing " + Q(path) + ": it is a symlink (or passes through one)",
                       "the state volume is not trusted and may not redirect agent-init; "
                       "remove the symlink and let agent-init create a real directory");
    case ENOTDIR:
      return MakeError(Kind::kLayout, 0,
                       "refusing " + Q(path) + ": expected a directory, found another kind of file",
                       "remove or rename it so that agent-init can create the directory");
    default:
      return MakeError(KindForErrno(err), err, "open " + Q(path));
  }
}

Error HardLinkRefusal(const std::string& path, std::uint64_t links) {
  return MakeError(Kind::kDenied, 0,
                   "refusing " + Q(path) + ": it has " + std::to_string(links) +
                       " names (hard links), and a hard link can bring a file from outside the volume into it",
                   "the agent's state has no hard links: find the other names (find <volume> -xdev -samefile " +
                       Q(path) + "), remove them or this one, and start again");
}

Result<Dir> Dir::OpenTrusted(const std::string& path, Kind missing_kind) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return std::unexpected(MakeError(missing_kind, err, "open " + Q(path)));
    return SysFail(err, "open " + Q(path), missing_kind);
  }
  return Dir(UniqueFd(fd), path);
}

Result<Dir> Dir::OpenSub(std::string_view rel) const { return Walk(rel, std::nullopt); }

Result<Dir> Dir::MakeSub(std::string_view rel, mode_t mode) const { return Walk(rel, mode); }

Result<Dir> Dir::Walk(std::string_view rel, std::optional<mode_t> create) const {
  auto parts = SplitRelative(rel);
  if (!parts) return Fail(Kind::kLayout, "refusing path " + Q(PathOf(rel)) + ": not a plain relative path");
  int cur = fd_.get();
  UniqueFd owned;
  std::string shown = path_;
  for (auto part : *parts) {
    shown = Join(shown, part);
    std::string name(part);
    int fd = OpenDirNoFollow(cur, name.c_str());
    if (fd < 0 && errno == ENOENT) {
      if (!create) return SysFail(ENOENT, "open " + Q(shown), Kind::kLayout);
      // mkdirat never follows a symlink planted at `name`: it fails with
      // EEXIST and the open below refuses it.
      if (::mkdirat(cur, name.c_str(), *create) == 0) {
        // The new name durable before anything is put below it: what a
        // crash keeps of a directory whose own name it lost is nothing.
        if (sys::Fsync(cur) < 0 && errno != EINVAL) return SysFail(errno, "sync " + Q(PathOf(rel)));
      } else if (errno != EEXIST) {
        int err = errno;
        return SysFail(err, "create directory " + Q(shown));
      }
      fd = OpenDirNoFollow(cur, name.c_str());
    }
    if (fd < 0) return std::unexpected(RefusalFor(errno, cur, name, shown));
    owned.reset(fd);
    cur = fd;
  }
  return Dir(std::move(owned), PathOf(rel));
}

Result<Dir::Parent> Dir::OpenParent(std::string_view rel) const {
  size_t slash = rel.rfind('/');
  std::string_view leaf = slash == std::string_view::npos ? rel : rel.substr(slash + 1);
  if (!IsPlainName(leaf))
    return Fail(Kind::kLayout, "refusing path " + Q(PathOf(rel)) + ": not a plain name");
  if (slash == std::string_view::npos) return Parent{UniqueFd(), fd_.get(), std::string(leaf)};
  auto parent = OpenSub(rel.substr(0, slash));
  if (!parent) return std::unexpected(parent.error());
  int fd = parent->fd();
  return Parent{std::move(parent->fd_), fd, std::string(leaf)};
}

Result<UniqueFd> Dir::OpenFile(std::string_view rel, int flags, mode_t mode) const {
  auto parent = OpenParent(rel);
  if (!parent) return std::unexpected(parent.error());
  const std::string& leaf = parent->leaf;
  const int create = flags & (O_CREAT | O_EXCL);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if ((create & O_EXCL) == 0) {
      // Look before opening: opening a device planted here could have side
      // effects, and a FIFO could block. O_PATH opens neither, nor follows a
      // symlink (it yields the link itself).
      int path_fd = ::openat(parent->fd, leaf.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
      if (path_fd >= 0) {
        UniqueFd at(path_fd);
        struct stat st;
        if (::fstat(path_fd, &st) < 0) return SysFail(errno, "stat " + Q(PathOf(rel)));
        if (S_ISLNK(st.st_mode)) return std::unexpected(RefusalFor(ELOOP, parent->fd, leaf, PathOf(rel)));
        if (!S_ISREG(st.st_mode)) {
          return Fail(Kind::kLayout, "refusing " + Q(PathOf(rel)) + ": expected a regular file",
                      "remove it; agent-init recreates the files it owns");
        }
        if (st.st_nlink > 1) return std::unexpected(HardLinkRefusal(PathOf(rel), st.st_nlink));
        // The very inode just checked, opened for real.
        int fd = ::open(sys::ProcFdPath(path_fd).c_str(), (flags & ~create) | O_CLOEXEC);
        if (fd < 0) return SysFail(errno, "open " + Q(PathOf(rel)));
        return UniqueFd(fd);
      }
      if (errno != ENOENT || !(create & O_CREAT)) return SysFail(errno, "open " + Q(PathOf(rel)));
    }
    // Creating: O_EXCL never opens anything that is already there.
    int fd = ::openat(parent->fd, leaf.c_str(), flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0) return UniqueFd(fd);
    int err = errno;
    if (err != EEXIST || (create & O_EXCL)) {
      return SysFail(err, "create " + Q(PathOf(rel)));
    }
    // Someone created it between the look and the create: look again.
  }
  return Fail(Kind::kCannotPlace, "open " + Q(PathOf(rel)) + ": it keeps changing under agent-init");
}

Result<std::optional<struct statx>> Dir::Stat(std::string_view rel) const {
  auto parent = OpenParent(rel);
  if (!parent) {
    if (parent.error().err == ENOENT) return std::optional<struct statx>{};
    return std::unexpected(parent.error());
  }
  struct statx st;
  if (sys::Statx(parent->fd, parent->leaf.c_str(), AT_SYMLINK_NOFOLLOW, &st) < 0) {
    int err = errno;
    if (err == ENOENT) return std::optional<struct statx>{};
    return SysFail(err, "stat " + Q(PathOf(rel)));
  }
  return std::optional<struct statx>{st};
}

Result<std::optional<Dir>> Dir::OpenSubIfAny(std::string_view name) const {
  auto st = Stat(name);
  if (!st) return std::unexpected(st.error());
  if (!*st) return std::optional<Dir>{};
  auto sub = OpenSub(name);
  if (!sub) return std::unexpected(sub.error());
  return std::optional<Dir>{std::move(*sub)};
}

Result<struct statx> Dir::StatSelf() const {
  struct statx st;
  if (sys::Statx(fd_.get(), "", AT_EMPTY_PATH, &st) < 0) return SysFail(errno, "stat " + Q(path_));
  return st;
}

Result<std::optional<std::string>> Dir::ReadSmallFile(std::string_view rel, size_t limit) const {
  auto fd = OpenFile(rel, O_RDONLY);
  if (!fd) {
    if (fd.error().err == ENOENT) return std::optional<std::string>{};
    return std::unexpected(fd.error());
  }
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd->get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysFail(errno, "read " + Q(PathOf(rel)));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > limit) {
      return Fail(Kind::kLayout, "read " + Q(PathOf(rel)) + ": larger than " + std::to_string(limit) +
                                     " bytes, refusing to parse it");
    }
  }
  return std::optional<std::string>{std::move(out)};
}

std::optional<std::string> Dir::ReadLink(std::string_view rel) const {
  auto parent = OpenParent(rel);
  if (!parent) return std::nullopt;
  char buf[4096];
  ssize_t n = ::readlinkat(parent->fd, parent->leaf.c_str(), buf, sizeof buf);
  if (n < 0 || static_cast<size_t>(n) >= sizeof buf) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

Result<std::vector<Dir::Entry>> Dir::List() const {
  // fdopendir takes ownership of its fd: give it a fresh one that starts at
  // offset 0, so that this Dir can be listed again.
  int fd = ::openat(fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return SysFail(errno, "open " + Q(path_));
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    int err = errno;
    ::close(fd);
    return SysFail(err, "list " + Q(path_));
  }
  std::vector<Entry> out;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") out.push_back(Entry{std::string(name), e->d_type});
    errno = 0;
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) return SysFail(err, "list " + Q(path_));
  return out;
}

std::string Dir::PathOf(std::string_view rel) const { return Join(path_, rel); }

Result<Dir> Dir::Dup() const {
  int fd = ::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return SysFail(errno, "dup " + Q(path_));
  return Dir(UniqueFd(fd), path_);
}

}  // namespace agent_init
