#include "base/privileged.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/sys.h"

namespace agent_init {
namespace {

class RealPrivileged final : public Privileged {
 public:
  int BindNewApi(int source_fd, int target_fd) override { return sys::BindFdToFd(source_fd, target_fd); }
  int BindClassic(int source_fd, int target_fd) override { return sys::BindViaProcFd(source_fd, target_fd); }
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

}  // namespace agent_init
