#include "process/privileges.h"

#include <linux/capability.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

namespace agent_init {
namespace {

// The system calls with 32-bit ids: on i386 and arm the plain ones take
// 16-bit ids (glibc's wrappers pick the *32 ones there too).
#ifdef SYS_setuid32
constexpr long kSetgroups = SYS_setgroups32, kSetgid = SYS_setgid32, kSetuid = SYS_setuid32;
#else
constexpr long kSetgroups = SYS_setgroups, kSetgid = SYS_setgid, kSetuid = SYS_setuid;
#endif

std::string UidGid(const Credentials& c) { return std::to_string(c.uid) + ":" + std::to_string(c.gid); }

bool RunsAs(const Credentials& c) noexcept {
  uid_t ruid, euid, suid;
  gid_t rgid, egid, sgid;
  ::getresuid(&ruid, &euid, &suid);
  ::getresgid(&rgid, &egid, &sgid);
  return ruid == c.uid && euid == c.uid && suid == c.uid && rgid == c.gid && egid == c.gid && sgid == c.gid;
}

bool AnyCapability() noexcept {
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
void ClearInheritable() noexcept {
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

Result<void> CheckCanSwitch(const Credentials& c) {
  if (RunsAs(c) || ::geteuid() == 0) return {};
  return Fail(Kind::kDenied,
              "--user " + UidGid(c) + ": agent-init runs as uid " + std::to_string(::geteuid()) +
                  " and cannot switch users",
              "run agent-init as root (it drops to the user itself), or drop --user");
}

SwitchOutcome SwitchIds(const Credentials& c) noexcept {
  // The raw system calls: glibc's wrappers may coordinate with other threads
  // (setxid), which a child sharing our memory must not do.
  if (!RunsAs(c)) {
    ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    if (::syscall(kSetgroups, c.groups.size(), c.groups.data()) < 0) {
      return {SwitchStep::kSetgroups, errno};
    }
    if (::syscall(kSetgid, c.gid) < 0) return {SwitchStep::kSetgid, errno};
    if (::syscall(kSetuid, c.uid) < 0) return {SwitchStep::kSetuid, errno};
    ClearInheritable();
  }
  if (!RunsAs(c)) return {SwitchStep::kIdsLeft, 0};
  if (c.uid != 0 && AnyCapability()) return {SwitchStep::kCapabilitiesLeft, 0};
  return {};
}

Kind SwitchFailureKind(SwitchOutcome outcome) noexcept {
  return outcome.err != 0 ? KindForErrno(outcome.err) : Kind::kDenied;
}

Error SwitchFailure(const Credentials& c, SwitchOutcome outcome) {
  const Kind kind = SwitchFailureKind(outcome);
  switch (outcome.failed) {
    case SwitchStep::kSetgroups:
      return MakeError(kind, outcome.err, "setgroups for --user " + UidGid(c));
    case SwitchStep::kSetgid:
      return MakeError(kind, outcome.err, "setgid " + std::to_string(c.gid));
    case SwitchStep::kSetuid:
      return MakeError(kind, outcome.err, "setuid " + std::to_string(c.uid));
    case SwitchStep::kIdsLeft:
      return MakeError(kind, 0,
                       "--user " + UidGid(c) + ": the switch did not take effect; refusing to run the agent");
    case SwitchStep::kCapabilitiesLeft:
      return MakeError(
          kind, 0, "--user " + UidGid(c) + ": capabilities are left after the switch; refusing to run the agent",
          "is agent-init running with SECBIT_KEEP_CAPS or a securebits lock?");
    case SwitchStep::kDone:
      break;
  }
  return MakeError(kind, 0, "--user " + UidGid(c) + ": the switch was reported as failed without a cause");
}

std::string HomeFor(const Credentials& c) { return c.home.empty() ? "/" : c.home; }

Result<void> DropPrivileges(const Credentials& c) {
  if (auto can = CheckCanSwitch(c); !can) return can;
  if (SwitchOutcome outcome = SwitchIds(c); outcome.failed != SwitchStep::kDone) {
    return std::unexpected(SwitchFailure(c, outcome));
  }
  ::setenv("HOME", HomeFor(c).c_str(), 1);
  return {};
}

}  // namespace agent_init
