#include "base/btrfs.h"

#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstring>

#include "base/log.h"
#include "base/unique_fd.h"

namespace agent_init::btrfs {
namespace {

// The inode number of every subvolume's root directory
// (BTRFS_FIRST_FREE_OBJECTID).
constexpr ino_t kSubvolumeRootIno = 256;

bool OnBtrfs(int fd) {
  struct statfs fs;
  return ::fstatfs(fd, &fs) == 0 && static_cast<unsigned long>(fs.f_type) == BTRFS_SUPER_MAGIC;
}

bool IsRootFd(int fd) {
  struct stat st;
  return OnBtrfs(fd) && ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_ino == kSubvolumeRootIno;
}

// The ioctls take the new name in a fixed buffer.
bool FillName(char* out, size_t size, const std::string& name) {
  if (name.empty() || name.size() >= size || name.find('/') != std::string::npos) return false;
  std::memcpy(out, name.c_str(), name.size() + 1);
  return true;
}

// Nested subvolumes show up in a snapshot as empty directories: one with
// any is copied instead. Asked of the kernel (Linux 4.18, unprivileged);
// when it cannot say, we assume there are some.
bool HasNestedSubvolumes(int fd) {
  struct btrfs_ioctl_get_subvol_rootref_args args;
  std::memset(&args, 0, sizeof args);
  if (::ioctl(fd, BTRFS_IOC_GET_SUBVOL_ROOTREF, &args) < 0) return true;
  return args.num_items != 0;
}

}  // namespace

bool IsBtrfs(const Dir& dir) { return OnBtrfs(dir.fd()); }

bool IsSubvolume(const Dir& dir, const std::string& name) {
  UniqueFd fd(OpenDirNoFollow(dir.fd(), name.c_str()));
  return fd.valid() && IsRootFd(fd.get());
}

bool IsSubvolumeRoot(int fd) { return IsRootFd(fd); }

Result<bool> MakeSubvolume(const Dir& dir, const std::string& name, mode_t mode) {
  if (!OnBtrfs(dir.fd())) return false;
  struct btrfs_ioctl_vol_args args;
  std::memset(&args, 0, sizeof args);
  if (!FillName(args.name, sizeof args.name, name)) return false;
  if (::ioctl(dir.fd(), BTRFS_IOC_SUBVOL_CREATE, &args) < 0) {
    int err = errno;
    if (err == EEXIST || err == ENOSPC || err == EDQUOT || err == EROFS)
      return SysFail(err, "create subvolume " + Q(dir.PathOf(name)));
    log::Debug("btrfs refused a subvolume; a plain directory instead",
               {{"path", dir.PathOf(name)}, {"error", std::strerror(err)}});
    return false;
  }
  // The kernel makes it 0755 whatever the umask: the mode the caller asked for.
  UniqueFd made(OpenDirNoFollow(dir.fd(), name.c_str()));
  if (!made.valid() || ::fchmod(made.get(), mode) < 0) {
    int err = errno;
    return SysFail(err, "chmod subvolume " + Q(dir.PathOf(name)));
  }
  return true;
}

Result<bool> Snapshot(const Dir& from, const std::string& name, const Dir& to, const std::string& to_name) {
  UniqueFd src(OpenDirNoFollow(from.fd(), name.c_str()));
  // Not a subvolume root: the ioctl would snapshot the whole subvolume that
  // holds it.
  if (!src.valid() || !IsRootFd(src.get()) || !OnBtrfs(to.fd())) return false;
  if (HasNestedSubvolumes(src.get())) {
    log::Debug("the subvolume holds subvolumes of its own; copying it instead",
               {{"path", from.PathOf(name)}});
    return false;
  }
  struct btrfs_ioctl_vol_args_v2 args;
  std::memset(&args, 0, sizeof args);
  if (!FillName(args.name, sizeof args.name, to_name)) return false;
  args.fd = src.get();
  if (::ioctl(to.fd(), BTRFS_IOC_SNAP_CREATE_V2, &args) < 0) {
    int err = errno;
    if (err == EEXIST || err == ENOSPC || err == EDQUOT || err == EROFS)
      return SysFail(err, "snapshot subvolume " + Q(from.PathOf(name)) + " as " + Q(to.PathOf(to_name)));
    log::Debug("btrfs refused a snapshot; copying instead",
               {{"path", from.PathOf(name)}, {"error", std::strerror(err)}});
    return false;
  }
  return true;
}

bool Destroy(int dirfd, const std::string& name) {
  struct btrfs_ioctl_vol_args args;
  std::memset(&args, 0, sizeof args);
  if (!FillName(args.name, sizeof args.name, name)) return false;
  return ::ioctl(dirfd, BTRFS_IOC_SNAP_DESTROY, &args) == 0;
}

}  // namespace agent_init::btrfs
