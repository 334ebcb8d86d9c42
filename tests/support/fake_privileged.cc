#include "fake_privileged.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

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

int FakePrivileged::BindNewApi(int, int) {
  binds.push_back("new-api");
  return Answer(new_api_errno);
}

int FakePrivileged::BindClassic(int, int) {
  binds.push_back("mount(2)");
  return Answer(classic_errno);
}

int FakePrivileged::Chown(int dirfd, const char* name, uid_t uid, gid_t gid, int) {
  // As the kernel would: a missing entry is ENOENT.
  struct stat st;
  if (name != nullptr && *name != '\0' && ::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return -1;
  std::string path = PathOfFd(dirfd);
  if (name != nullptr && *name != '\0') path += "/" + std::string(name);
  chowns.push_back({path, uid, gid});
  return Answer(chown_errno);
}

bool FakePrivileged::Chowned(const std::string& path, uid_t uid, gid_t gid) const {
  for (const auto& c : chowns) {
    if (c.path == path && c.uid == uid && c.gid == gid) return true;
  }
  return false;
}

}  // namespace agent_init::test
