// The system calls whose outcome depends on privilege: mounting, changing
// owners and asking for the mount capability. They stand behind one
// interface so that placement and the hand-over to --user run in unit tests
// without root (a fake that records and refuses calls), as ninja's
// DiskInterface does for the filesystem; Kernel() is the real one.
#pragma once

#include <sys/types.h>

namespace agent_init {

class Privileged {
 public:
  virtual ~Privileged() = default;

  /// Bind-mounts `source_fd` onto `target_fd` with the new mount API
  /// (open_tree + move_mount, no path lookup). 0, or -1 with errno.
  virtual int BindNewApi(int source_fd, int target_fd) = 0;

  /// The same with mount(2) through /proc/self/fd of the two fds.
  virtual int BindClassic(int source_fd, int target_fd) = 0;

  /// fchownat(2).
  virtual int Chown(int dirfd, const char* name, uid_t uid, gid_t gid, int flags) = 0;

  /// Whether CAP_SYS_ADMIN is in this process's effective set. Seccomp and
  /// LSMs may still refuse a mount; this is what inspect predicts from.
  virtual bool HasMountCapability() = 0;
};

/// The real system calls.
Privileged& Kernel();

}  // namespace agent_init
