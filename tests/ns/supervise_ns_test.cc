// agent-init --supervise against the acceptance cases (tests/supervise), as
// PID 1 of a fresh PID namespace and as a child subreaper.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include <gtest/gtest.h>

#include "binary.h"
#include "home_fixture.h"
#include "init_cases.h"
#include "namespace.h"
#include "process/proc.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

struct Placement {
  const char* name;
  bool pid1;
};

class SuperviseNs : public ::testing::TestWithParam<std::tuple<Placement, size_t>> {};

TEST_P(SuperviseNs, Case) {
  REQUIRE_MOUNT_NAMESPACE();
  auto [placement, index] = GetParam();
  const test::InitCase& c = test::AllCases()[index];
  test::TempDir t;
  test::Make711Home(t / "home");
  test::MakeDirs(t / "state");
  test::InitFlavour f;
  f.name = "agent-init";
  f.pid1 = placement.pid1;
  f.agent_init = true;
  f.drop_hup = {"--signal-map", "HUP:0"};
  f.workdir = t.path();
  f.prefix = {test::AgentInitBinary(), "--home", t / "home",    "--state", t / "state", "--method", "symlink",
              "--lock-timeout",        "5",      "--supervise", "--grace", "2",         "--"};
  test::CaseResult r = c.run(f);
  ASSERT_TRUE(r.applies) << r.detail;
  EXPECT_TRUE(r.ok) << c.what << ": " << r.detail;
}

std::vector<size_t> CaseIndexes() {
  std::vector<size_t> out;
  for (size_t i = 0; i < test::AllCases().size(); ++i) out.push_back(i);
  return out;
}

INSTANTIATE_TEST_SUITE_P(All, SuperviseNs,
                         ::testing::Combine(::testing::Values(Placement{"pid1", true},
                                                              Placement{"subreaper", false}),
                                            ::testing::ValuesIn(CaseIndexes())),
                         [](const auto& param_info) {
                           return std::string(std::get<0>(param_info.param).name) + "_" +
                                  test::AllCases()[std::get<1>(param_info.param)].name;
                         });

// A kernel before 5.9 has no close_range, and seccomp profiles written
// before it answer ENOSYS: the supervisor must still close what it
// inherited. A seccomp filter gives agent-init exactly that.
TEST(SuperviseFdsNs, InheritedFdsAreClosedWithoutCloseRange) {
  REQUIRE_MOUNT_NAMESPACE();
  test::TempDir t;
  test::Make711Home(t / "home");
  test::MakeDirs(t / "state");
  int err[2];
  ASSERT_EQ(::pipe2(err, O_CLOEXEC), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open((t / "inherited").c_str(), O_RDONLY | O_CREAT, 0600);
    if (fd < 0 || ::dup2(fd, 9) < 0 || ::dup2(err[1], 2) < 0) ::_exit(125);
    if (!test::DenySyscall(__NR_close_range)) ::_exit(126);
    std::string bin = test::AgentInitBinary(), home = t / "home", state = t / "state";
    const char* argv[] = {bin.c_str(), "--home", home.c_str(), "--state", state.c_str(), "--method", "symlink",
                          "--log-level", "debug", "--supervise", "--", "/bin/sleep", "30", nullptr};
    ::execv(argv[0], const_cast<char**>(argv));
    ::_exit(127);
  }
  ::close(err[1]);
  // Its log says when it supervises, after it closed what it inherited.
  std::string log;
  char buf[4096];
  for (ssize_t n; log.find("supervising") == std::string::npos && (n = ::read(err[0], buf, sizeof buf)) > 0;)
    log.append(buf, static_cast<size_t>(n));
  const bool kept = ::access(("/proc/" + std::to_string(pid) + "/fd/9").c_str(), F_OK) == 0;
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(err[0]);
  ASSERT_NE(log.find("supervising"), std::string::npos) << log;
  EXPECT_FALSE(kept) << "the supervisor keeps the inherited fd 9 when close_range is ENOSYS";
}

// As a subreaper (not PID 1: --supervise under a shell or another
// supervisor) agent-init reaps every descendant before it exits, zombies
// included, and leaves nothing to its own parent. The parent here is a
// harness that is itself a subreaper and counts what is re-parented to it
// after agent-init exited: a process that ignores SIGTERM, killed after the
// grace period, dies while agent-init settles (README: "every exited child
// ... is reaped").
TEST(SuperviseReapNs, NothingIsLeftToTheParentSubreaper) {
  REQUIRE_MOUNT_NAMESPACE();
  test::TempDir t;
  test::Make711Home(t / "home");
  test::MakeDirs(t / "state");
  std::string report;
  for (int round = 1; round <= 4; ++round) {
    // The harness: a child of this test, itself a subreaper.
    std::string line = test::InChild([&]() -> std::string {
      ::prctl(PR_SET_CHILD_SUBREAPER, 1);
      pid_t init = ::fork();
      if (init == 0) {
        int null = ::open("/dev/null", O_RDWR);
        ::dup2(null, 0);
        ::dup2(null, 1);
        ::dup2(null, 2);
        std::string bin = test::AgentInitBinary(), home = t / "home", state = t / "state";
        const char* argv[] = {bin.c_str(), "--home", home.c_str(), "--state", state.c_str(), "--method",
                              "symlink", "--supervise", "--grace", "0", "--", "/bin/sh", "-c",
                              "(trap '' TERM; sleep 30) & sleep 0.2; exit 3", nullptr};
        ::execv(argv[0], const_cast<char**>(argv));
        ::_exit(127);
      }
      int status = 0;
      ::waitpid(init, &status, 0);
      // What agent-init left to us: the dead ones, reaped here, and the live ones.
      int dead = 0;
      for (;;) {
        siginfo_t info{};
        if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG) < 0 || info.si_pid == 0) break;
        ++dead;
      }
      std::vector<pid_t> alive = Descendants(::getpid());
      for (pid_t p : alive) ::kill(p, SIGKILL);
      return "exit " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ", " +
             std::to_string(dead) + " dead and " + std::to_string(alive.size()) + " live left";
    });
    if (line != "exit 3, 0 dead and 0 live left") report += "round " + std::to_string(round) + ": " + line + "; ";
  }
  EXPECT_EQ(report, "");
}

}  // namespace
}  // namespace agent_init
