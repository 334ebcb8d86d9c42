#include "privileges.h"

#include <grp.h>
#include <linux/capability.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

namespace agent_init {
namespace {

std::string Ids(const Credentials& c) { return std::to_string(c.uid) + ":" + std::to_string(c.gid); }

bool AnyCapability() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) < 0) return true;
  for (const auto& d : data) {
    if (d.effective != 0 || d.permitted != 0 || d.inheritable != 0) return true;
  }
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap) {
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) == 1) return true;
  }
  return false;
}

// Clears the inheritable set; permitted and effective are cleared by the
// kernel when root's uids all leave 0.
void ClearInheritable() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) < 0) return;
  data[0].inheritable = data[1].inheritable = 0;
  ::syscall(SYS_capset, &header, data);
}

}  // namespace

Result<void> RefuseSetuidStart() {
  if (::getauxval(AT_SECURE) != 0) {
    return Fail(
        Kind::kDenied, "agent-init was started setuid or setgid; refusing to run",
        "remove the setuid/setgid bits (chmod u-s,g-s) and use --user to run the agent as another user");
  }
  return {};
}

Result<void> DropPrivileges(const Credentials& c) {
  uid_t ruid, euid, suid;
  gid_t rgid, egid, sgid;
  ::getresuid(&ruid, &euid, &suid);
  ::getresgid(&rgid, &egid, &sgid);
  bool already =
      ruid == c.uid && euid == c.uid && suid == c.uid && rgid == c.gid && egid == c.gid && sgid == c.gid;
  if (!already) {
    if (euid != 0) {
      return Fail(Kind::kDenied,
                  "--user " + Ids(c) + ": agent-init runs as uid " + std::to_string(euid) +
                      " and cannot switch users",
                  "run agent-init as root (it drops to the user itself), or drop --user");
    }
    ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    if (::setgroups(c.groups.size(), c.groups.data()) < 0)
      return SysFail(errno, "setgroups for --user " + Ids(c));
    if (::setgid(c.gid) < 0) return SysFail(errno, "setgid " + std::to_string(c.gid));
    if (::setuid(c.uid) < 0) return SysFail(errno, "setuid " + std::to_string(c.uid));
    ClearInheritable();
  }
  ::getresuid(&ruid, &euid, &suid);
  ::getresgid(&rgid, &egid, &sgid);
  if (ruid != c.uid || euid != c.uid || suid != c.uid || rgid != c.gid || egid != c.gid || sgid != c.gid) {
    return Fail(Kind::kDenied,
                "--user " + Ids(c) + ": the switch did not take effect; refusing to run the agent");
  }
  if (c.uid != 0 && AnyCapability()) {
    return Fail(Kind::kDenied,
                "--user " + Ids(c) + ": capabilities are left after the switch; refusing to run the agent",
                "is agent-init running with SECBIT_KEEP_CAPS or a securebits lock?");
  }
  if (std::getenv("HOME") == nullptr && !c.home.empty()) ::setenv("HOME", c.home.c_str(), 1);
  return {};
}

}  // namespace agent_init
