// A stand-in for the privileged system calls (base/privileged.h): it records
// every mount and chown it is asked for, answers with the errno a test sets
// (a chown of a missing entry is ENOENT, as from the kernel), and changes
// nothing on disk, so that placement and the hand-over to --user
// are tested without root.
#pragma once

#include <sys/types.h>

#include <cerrno>

#include <string>
#include <vector>

#include "base/privileged.h"

namespace agent_init::test {

class FakePrivileged final : public Privileged {
 public:
  // 0: the call "succeeds" (and does nothing); else it fails with this errno.
  int new_api_errno = EPERM;
  int classic_errno = EPERM;
  int chown_errno = 0;
  bool may_mount = false;
  // >= 0: the binds after the first this many (successful ones) fail with EPERM.
  int binds_succeeding = -1;

  struct Chown {
    std::string path;  // the directory's path, plus "/name" unless empty
    uid_t uid;
    gid_t gid;
    int flags;
  };
  struct Bind {
    std::string how;     // "new-api" or "mount(2)"
    std::string source;  // the paths of the two fds, as the kernel names them
    std::string target;
    BindDepth depth;
  };
  std::vector<std::string> detached;  // the paths of Detach's fds
  std::vector<Bind> binds;  // in call order
  std::vector<Chown> chowns;

  /// The `how` of every bind, in order.
  std::vector<std::string> BindCalls() const;

  int BindNewApi(int source_fd, int target_fd, BindDepth depth) override;
  int BindClassic(int source_fd, int target_fd, BindDepth depth) override;
  int Detach(int fd) override;
  int Chown(int dirfd, const char* name, uid_t uid, gid_t gid, int flags) override;
  bool HasMountCapability() override { return may_mount; }

  /// Whether `path` was chowned to uid:gid, never following a symlink
  /// (AT_SYMLINK_NOFOLLOW, or AT_EMPTY_PATH on the directory's own fd).
  bool Chowned(const std::string& path, uid_t uid, gid_t gid) const;
};

}  // namespace agent_init::test
