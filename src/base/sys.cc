#include "base/sys.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace agent_init::sys {

int Statx(int dirfd, const char* path, int flags, struct statx* out) {
  return ::statx(dirfd, path, flags, STATX_BASIC_STATS | STATX_MNT_ID, out);
}

// qemu-user (7.2) passes the STATX_MNT_ID bit through but not the id: no
// mount has id 0.
bool HasMountId(const struct statx& st) { return (st.stx_mask & STATX_MNT_ID) != 0 && st.stx_mnt_id != 0; }

std::string FilesystemName(int fd) {
  struct statfs fs;
  if (::fstatfs(fd, &fs) < 0) return "unknown";
  switch (static_cast<unsigned long>(fs.f_type)) {
    case EXT4_SUPER_MAGIC:
      return "ext4";  // ext2 and ext3 share it
    case XFS_SUPER_MAGIC:
      return "xfs";
    case BTRFS_SUPER_MAGIC:
      return "btrfs";
    case TMPFS_MAGIC:
      return "tmpfs";
    case OVERLAYFS_SUPER_MAGIC:
      return "overlay";
    case NFS_SUPER_MAGIC:
      return "nfs";
    case 0xf2f52010UL:
      return "f2fs";
    case 0x2fc12fc1UL:
      return "zfs";
    default: {
      char hex[32];
      std::snprintf(hex, sizeof hex, "0x%lx", static_cast<unsigned long>(fs.f_type));
      return hex;
    }
  }
}

bool SameMount(const struct statx& a, const struct statx& b) {
  // The mount id where both have one: a btrfs subvolume or an overlayfs file
  // has a device of its own on the same mount.
  if (HasMountId(a) && HasMountId(b)) return a.stx_mnt_id == b.stx_mnt_id;
  return a.stx_dev_major == b.stx_dev_major && a.stx_dev_minor == b.stx_dev_minor;
}

int BindFdToFd(int source_fd, int target_fd, bool recursive) {
  int tree = ::open_tree(source_fd, "",
                         OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0));
  if (tree < 0) return -1;
  int rc = ::move_mount(tree, "", target_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
  int saved = errno;
  ::close(tree);
  errno = saved;
  return rc;
}

int BindViaProcFd(int source_fd, int target_fd, bool recursive) {
  std::string src = ProcFdPath(source_fd);
  std::string dst = ProcFdPath(target_fd);
  return ::mount(src.c_str(), dst.c_str(), nullptr, MS_BIND | (recursive ? MS_REC : 0), nullptr);
}

std::string ProcFdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

std::string RealPathOf(int fd) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(ProcFdPath(fd).c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

void CloseRange(unsigned lo, unsigned hi) {
  if (lo > hi || ::close_range(lo, hi, 0) == 0) return;
  std::vector<int> open;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    const int own = ::dirfd(d);
    while (struct dirent* e = ::readdir(d)) {
      char* end = nullptr;
      long fd = std::strtol(e->d_name, &end, 10);
      if (*end == '\0' && end != e->d_name && fd != own && fd >= static_cast<long>(lo) && static_cast<unsigned long>(fd) <= hi)
        open.push_back(static_cast<int>(fd));
    }
    ::closedir(d);
  } else {
    struct rlimit limit {};
    rlim_t last = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 ? limit.rlim_cur : 1024;
    for (rlim_t fd = lo; fd < last && fd <= hi; ++fd) open.push_back(static_cast<int>(fd));
  }
  for (int fd : open) ::close(fd);
}

int Fsync(int fd) {
  int rc;
  do {
    rc = ::fsync(fd);
  } while (rc < 0 && errno == EINTR);
  return rc;
}

}  // namespace agent_init::sys

namespace agent_init::sys {

int RenameNoReplace(int olddirfd, const char* oldname, int newdirfd, const char* newname) {
  if (::renameat2(olddirfd, oldname, newdirfd, newname, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  struct stat st;
  if (::fstatat(newdirfd, newname, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    errno = EEXIST;
    return -1;
  }
  return ::renameat(olddirfd, oldname, newdirfd, newname);
}

}  // namespace agent_init::sys
