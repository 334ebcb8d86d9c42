#include "base/privileged.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "base/log.h"
#include "base/sys.h"

namespace agent_init {
namespace {

class RealPrivileged final : public Privileged {
 public:
  int BindNewApi(int source_fd, int target_fd, BindDepth depth) override {
    return sys::BindFdToFd(source_fd, target_fd, depth == BindDepth::kTree);
  }
  int BindClassic(int source_fd, int target_fd, BindDepth depth) override {
    return sys::BindViaProcFd(source_fd, target_fd, depth == BindDepth::kTree);
  }
  int Detach(int fd) override { return ::umount2(sys::ProcFdPath(fd).c_str(), MNT_DETACH); }
  int Chown(int dirfd, const char* name, uid_t uid, gid_t gid, int flags) override {
    return ::fchownat(dirfd, name, uid, gid, flags);
  }
  bool HasMountCapability() override {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (::syscall(SYS_capget, &header, data) < 0) return false;
    return (data[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32))) != 0;
  }
};

}  // namespace

Privileged& Kernel() {
  static RealPrivileged real;
  return real;
}

int BindFds(Privileged& ops, int source, int target, BindDepth depth, int& new_api_err) {
  new_api_err = 0;
  if (ops.BindNewApi(source, target, depth) == 0) return 0;
  new_api_err = errno;
  int rc = ops.BindClassic(source, target, depth);
  int err = errno;
  if (rc == 0) {
    log::Info("the new mount API (open_tree, move_mount) is refused here; bind-mounted with mount(2)",
              {{"error", std::strerror(new_api_err)}});
  }
  errno = err;
  return rc;
}

}  // namespace agent_init
