// The privilege drop's decisions and messages, as any user (the switch
// itself, as root, is in tests/ns and tests/e2e).
#include "process/privileges.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>

#include <grp.h>

#include <gtest/gtest.h>

#include "base/exit_codes.h"

namespace agent_init {
namespace {

Credentials Me() { return Credentials{::getuid(), ::getgid(), {}, "", ""}; }

// Runs `body` in a child as nobody (65534) when the test runs as root, and
// as it is otherwise; the child's answer is its exit status.
bool AsNobody(const std::function<bool()>& body) {
  if (::geteuid() != 0) return body();
  pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (::setgroups(0, nullptr) < 0 || ::setresgid(65534, 65534, 65534) < 0 ||
        ::setresuid(65534, 65534, 65534) < 0)
      ::_exit(2);
    ::_exit(body() ? 0 : 1);
  }
  int status = 0;
  return ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(Privileges, SwitchingToTheIdsItRunsAsIsANoOp) {
  EXPECT_TRUE(CheckCanSwitch(Me()));
  // As a non-root user: the ids stay, and no capability is left.
  EXPECT_TRUE(AsNobody([] { return SwitchIds(Me()).failed == SwitchStep::kDone; }));
}

// As root the real switch: setgroups, setgid, setuid, then verified.
TEST(Privileges, RootSwitchesToTheUserAndKeepsNothingOfRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root to switch users";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Credentials c{4242, 4343, {4343, 50}, "", ""};
    SwitchOutcome o = SwitchIds(c);
    gid_t groups[4];
    int n = ::getgroups(4, groups);
    bool ok = o.failed == SwitchStep::kDone && ::getuid() == 4242 && ::getegid() == 4343 && n == 2 &&
              ::setuid(0) < 0;  // and no way back
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(Privileges, WithoutRootAnotherUserIs77WithTheFix) {
  EXPECT_TRUE(AsNobody([] {
    auto r = CheckCanSwitch(Credentials{::getuid() + 1, ::getgid(), {}, "", ""});
    return !r && ExitCodeFor(r.error().kind) == 77 &&
           r.error().hint.find("run agent-init as root") != std::string::npos;
  }));
}

TEST(Privileges, EveryFailedStepHasItsMessageAndClass) {
  Credentials c{1000, 1000, {}, "", ""};
  struct Case {
    SwitchOutcome outcome;
    std::string says;
    int code;
  };
  for (const Case& k : std::vector<Case>{
           {{SwitchStep::kSetgroups, EPERM}, "setgroups for --user 1000:1000", 77},
           {{SwitchStep::kSetgid, EPERM}, "setgid 1000", 77},
           {{SwitchStep::kSetuid, EAGAIN}, "setuid 1000", 73},
           {{SwitchStep::kIdsLeft, 0}, "the switch did not take effect", 77},
           {{SwitchStep::kCapabilitiesLeft, 0}, "capabilities are left after the switch", 77},
       }) {
    Error e = SwitchFailure(c, k.outcome);
    EXPECT_NE(e.msg.find(k.says), std::string::npos) << e.msg;
    EXPECT_EQ(ExitCodeFor(e.kind), k.code) << e.msg;
    EXPECT_EQ(SwitchFailureKind(k.outcome), e.kind) << "the child's exit code is the parent's error's";
  }
}

// gosu's rule: the user's home from the passwd entry, or / without one,
// whatever HOME the caller had (Docker's /root).
TEST(Privileges, HomeIsTheUsersOrSlash) {
  Credentials c{1000, 1000, {}, "agent", "/home/agent"};
  EXPECT_EQ(HomeFor(c), "/home/agent");
  c.home.clear();
  EXPECT_EQ(HomeFor(c), "/") << "no passwd entry";
}

}  // namespace
}  // namespace agent_init
