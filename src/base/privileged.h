// The system calls whose outcome depends on privilege: mounting, changing
// owners and asking for the mount capability. They stand behind one
// interface so that placement and the hand-over to --user run in unit tests
// without root (a fake that records and refuses calls), as ninja's
// DiskInterface does for the filesystem; Kernel() is the real one.
#pragma once

#include <sys/types.h>

namespace agent_init {

/// A bind mount of the source's mount alone, or of it with every mount
/// below it (a recursive bind: MS_REC, AT_RECURSIVE).
enum class BindDepth { kOne, kTree };

class Privileged {
 public:
  virtual ~Privileged() = default;

  /// Bind-mounts `source_fd` onto `target_fd` with the new mount API
  /// (open_tree + move_mount, no path lookup). 0, or -1 with errno.
  virtual int BindNewApi(int source_fd, int target_fd, BindDepth depth) = 0;

  /// The same with mount(2) through /proc/self/fd of the two fds.
  virtual int BindClassic(int source_fd, int target_fd, BindDepth depth) = 0;

  /// Detaches the mount at `fd` (umount2 MNT_DETACH through /proc/self/fd).
  virtual int Detach(int fd) = 0;

  /// fchownat(2).
  virtual int Chown(int dirfd, const char* name, uid_t uid, gid_t gid, int flags) = 0;

  /// Whether CAP_SYS_ADMIN is in this process's effective set. Seccomp and
  /// LSMs may still refuse a mount; this is what inspect predicts from.
  virtual bool HasMountCapability() = 0;
};

/// The real system calls.
Privileged& Kernel();

/// Bind-mounts fd to fd: the new mount API where there is one, else mount(2)
/// through /proc/self/fd of the same verified fds. Seccomp profiles answer
/// the newer calls with ENOSYS or EPERM while allowing mount(2) (Docker's
/// default profile without SYS_ADMIN refuses both), so any failure of the
/// first is retried with the second, whose errno decides. `new_api_err` is
/// the first one's errno when it failed. 0, or -1 with errno.
int BindFds(Privileged& ops, int source, int target, BindDepth depth, int& new_api_err);

}  // namespace agent_init
