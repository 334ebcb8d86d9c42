// Thin wrappers over system calls that we always call the same way (statx
// with the mount id, fd-to-fd bind mounts). They return -1 and leave errno
// set, like the calls they wrap.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace agent_init::sys {

/// statx(2) asking for the basic stats and the mount id (Linux 5.8).
/// `flags` is passed through (AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH).
int Statx(int dirfd, const char* path, int flags, struct statx* out);

/// True when statx filled in stx_mnt_id (a kernel before 5.8 does not;
/// qemu-user sets the bit and leaves the id 0).
bool HasMountId(const struct statx& st);

/// True when `a` and `b` are on the same mount as far as statx can tell: the
/// same mount id where both have one, else the same device (which still
/// tells another filesystem apart, not a bind mount of the same one).
bool SameMount(const struct statx& a, const struct statx& b);

/// The type of the filesystem `fd` is on, by name where it is one the agent's
/// volumes are commonly on ("ext4", "xfs", "btrfs", "tmpfs", "overlay", ...),
/// else its magic number in hex; "unknown" when fstatfs fails.
std::string FilesystemName(int fd);

/// Clones the mount tree at `fd` and attaches it onto `target_fd`: a bind
/// mount from fd to fd, with no path lookup (Linux 5.2). -1/ENOSYS when the
/// new mount API is not available.
int BindFdToFd(int source_fd, int target_fd, bool recursive = false);

/// Classic mount(2) bind through /proc/self/fd of two verified fds.
int BindViaProcFd(int source_fd, int target_fd, bool recursive = false);

/// "/proc/self/fd/N"
std::string ProcFdPath(int fd);

/// The path the kernel gives for `fd` (its /proc/self/fd link: symlinks
/// resolved), or "" when it cannot tell.
std::string RealPathOf(int fd);

/// fsync(2) that retries EINTR.
int Fsync(int fd);

/// Closes every fd from `lo` to `hi`: close_range(2) (Linux 5.9), or on a
/// kernel or seccomp profile without it, each fd /proc/self/fd lists (every
/// fd up to the open-files limit when /proc is not mounted).
void CloseRange(unsigned lo, unsigned hi);

}  // namespace agent_init::sys

namespace agent_init::sys {

/// renameat2(RENAME_NOREPLACE): fails with EEXIST instead of replacing the
/// target. Filesystems without the flag get a check-then-rename, which is
/// enough under the state lock.
int RenameNoReplace(int olddirfd, const char* oldname, int newdirfd, const char* newname);

}  // namespace agent_init::sys
