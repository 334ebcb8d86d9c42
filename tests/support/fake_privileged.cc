#include "fake_privileged.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace agent_init::test {
namespace {

std::string PathOfFd(int fd) {
  char buf[4096];
  ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("?");
}

int Answer(int err) {
  if (err == 0) return 0;
  errno = err;
  return -1;
}

}  // namespace

int FakePrivileged::BindNewApi(int source_fd, int target_fd, BindDepth depth) {
  binds.push_back({"new-api", PathOfFd(source_fd), PathOfFd(target_fd), depth});
  if (binds_succeeding >= 0 && new_api_errno == 0 && binds_succeeding-- == 0) return Answer(EPERM);
  return Answer(new_api_errno);
}

int FakePrivileged::BindClassic(int source_fd, int target_fd, BindDepth depth) {
  binds.push_back({"mount(2)", PathOfFd(source_fd), PathOfFd(target_fd), depth});
  return Answer(binds_succeeding == 0 ? EPERM : classic_errno);
}

int FakePrivileged::Detach(int fd) {
  detached.push_back(PathOfFd(fd));
  return 0;
}

std::vector<std::string> FakePrivileged::BindCalls() const {
  std::vector<std::string> out;
  for (const auto& b : binds) out.push_back(b.how);
  return out;
}

int FakePrivileged::Chown(int dirfd, const char* name, uid_t uid, gid_t gid, int flags) {
  // As the kernel would: a missing entry is ENOENT.
  struct stat st;
  if (name != nullptr && *name != '\0' && ::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return -1;
  std::string path = PathOfFd(dirfd);
  if (name != nullptr && *name != '\0') path += "/" + std::string(name);
  chowns.push_back({path, uid, gid, flags});
  return Answer(chown_errno);
}

bool FakePrivileged::Chowned(const std::string& path, uid_t uid, gid_t gid) const {
  // The kernel names fds by their real path: compare with the real one (the
  // leaf itself may be a symlink, so only its directory is resolved).
  std::string real = path;
  size_t slash = path.rfind('/');
  char buf[PATH_MAX];
  if (slash != std::string::npos && ::realpath(path.substr(0, slash).c_str(), buf) != nullptr) {
    real = std::string(buf) + path.substr(slash);
  }
  for (const auto& c : chowns) {
    bool safe = (c.flags & AT_SYMLINK_NOFOLLOW) != 0 || (c.flags & AT_EMPTY_PATH) != 0;
    if (c.path == real && c.uid == uid && c.gid == gid && safe) return true;
  }
  return false;
}

}  // namespace agent_init::test
