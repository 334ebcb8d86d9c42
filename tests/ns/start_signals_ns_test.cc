// agent-init is a proper PID 1 from its first instruction: a SIGTERM or
// SIGINT before the command starts (while it waits for the volume's lock,
// or while it prepares the volume) stops the start with 128+N, the volume
// consistent and the command not run; a lock released by its holder hands
// the volume over at once (the wait wakes on the release, not on a timer).
// Run as PID 1 of a fresh PID namespace, where the kernel drops a signal
// that has no handler, and as an ordinary child.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "base/unique_fd.h"
#include "binary.h"
#include "home_fixture.h"
#include "init_cases.h"
#include "namespace.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

using test::Contains;

struct Where {
  const char* name;
  bool pid1;
};

struct Mode {
  const char* name;
  std::vector<std::string> args;  // between the options and the command
  bool runs_command;
};

const Mode kModes[] = {
    {"exec", {"--"}, true},
    {"supervise", {"--supervise", "--"}, true},
    {"prepare", {"prepare"}, false},
};

class StartSignalsNs : public ::testing::TestWithParam<std::tuple<Where, size_t>> {
 protected:
  void SetUp() override {
    REQUIRE_MOUNT_NAMESPACE();
    test::Make711Home(t_ / "home");
    test::MakeDirs(t_ / "state");
  }

  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  std::vector<std::string> Argv(const Mode& mode) {
    std::vector<std::string> argv{test::AgentInitBinary(), "--home", t_ / "home", "--state", t_ / "state",
                                  "--method", "symlink", "--lock-timeout", "20"};
    argv.insert(argv.end(), mode.args.begin(), mode.args.end());
    if (mode.runs_command) argv.insert(argv.end(), {"/bin/sh", "-c", "echo RAN"});
    return argv;
  }

  // The volume's lock, held as the running agent holds it.
  void HoldLock() {
    test::RunResult first = test::AgentInit({"--home", t_ / "home", "--state", t_ / "state", "prepare"});
    ASSERT_EQ(first.status, 0) << first.err;
    held_.reset(::open((t_ / "state/.agent-init/lock").c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(held_.valid());
    ASSERT_EQ(::flock(held_.get(), LOCK_EX), 0);
  }

  // Starts agent-init (PID 1 of a new PID namespace, or a plain child) with
  // a clean signal state, its log on a pipe, its output in a file.
  void Start(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
    int err[2];
    ASSERT_EQ(::pipe2(err, O_CLOEXEC), 0);
    const bool pid1 = std::get<0>(GetParam()).pid1;
    pid_ = test::ForkInit(pid1);
    if (pid_ == 0) {
      int out = ::open((t_ / "out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::dup2(err[1], 2);
      for (int sig = 1; sig < NSIG; ++sig) {
        if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
      }
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> cargv;
      for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
      cargv.push_back(nullptr);
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
    ::close(err[1]);
    log_.reset(err[0]);
    ASSERT_GT(pid_, 0);
    pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)));
    ASSERT_TRUE(pidfd_.valid());
  }

  // Reads the log until `what` appears (or it ends, or 10 s pass).
  bool LogSays(const std::string& what) {
    char buf[4096];
    while (!Contains(err_, what)) {
      struct pollfd p {
        log_.get(), POLLIN, 0
      };
      if (::poll(&p, 1, 10000) != 1) return false;
      ssize_t n = ::read(log_.get(), buf, sizeof buf);
      if (n <= 0) return false;
      err_.append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  // The exit code, once agent-init exits (-1 when it is still there after
  // 10 s: killed then).
  int Exit() {
    struct pollfd p {
      pidfd_.get(), POLLIN, 0
    };
    const bool exited = ::poll(&p, 1, 10000) == 1;
    if (!exited) ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    LogSays("\x01");  // the rest of the log, to its end
    if (!exited) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  test::TempDir t_;
  UniqueFd held_, log_, pidfd_;
  pid_t pid_ = -1;
  std::string err_;
};

TEST_P(StartSignalsNs, SigtermWhileWaitingForTheLockStopsTheStart) {
  const Mode& mode = kModes[std::get<1>(GetParam())];
  HoldLock();
  const std::string before = test::TreeDigest(t_ / "state");
  Start(Argv(mode));
  ASSERT_TRUE(LogSays("waiting for the volume")) << err_;
  ASSERT_EQ(::kill(pid_, SIGTERM), 0);
  EXPECT_EQ(Exit(), 143) << err_;
  EXPECT_TRUE(Contains(err_, "stopped by SIGTERM while waiting for the volume")) << err_;
  EXPECT_FALSE(Contains(test::ReadFile(t_ / "out"), "RAN"));
  EXPECT_EQ(test::TreeDigest(t_ / "state"), before) << "the volume changed";
}

TEST_P(StartSignalsNs, SigintDuringPrepareFinishesItThenStops) {
  const Mode& mode = kModes[std::get<1>(GetParam())];
  // Sent from inside the start, just after it took the lock: the migration
  // of the image's run directory that follows is finished first.
  test::WriteFile(t_ / test::kVh + "/run/agent.id", "A");
  Start(Argv(mode), {"AGENT_INIT_TEST_HOOK_STEP=volume locked", "AGENT_INIT_TEST_HOOK=kill -INT $PPID"});
  EXPECT_EQ(Exit(), 130) << err_;
  EXPECT_TRUE(Contains(err_, "stopped by SIGINT before the command started")) << err_;
  EXPECT_FALSE(Contains(test::ReadFile(t_ / "out"), "RAN"));
  EXPECT_EQ(test::ReadFile(t_ / "state/run/agent.id"), "A") << "the state moved to the volume";
  EXPECT_TRUE(test::IsSymlink(t_ / test::kVh + "/run")) << "the run directory is in place";
  EXPECT_FALSE(test::Exists(t_ / "state/.agent-init/journal")) << "no change left half done";
}

// The wait's timer is switched off (a test build's switch): only the
// release can end it, before the test's 10 s are up.
TEST_P(StartSignalsNs, TheHoldersReleaseHandsTheVolumeOver) {
  const Mode& mode = kModes[std::get<1>(GetParam())];
  HoldLock();
  Start(Argv(mode), {"AGENT_INIT_TEST_LOCK_WAIT_WITHOUT_TIMER=1"});
  ASSERT_TRUE(LogSays("waiting for the volume")) << err_;
  held_.reset();  // the old agent exits
  EXPECT_EQ(Exit(), 0) << err_;
  EXPECT_EQ(Contains(test::ReadFile(t_ / "out"), "RAN"), mode.runs_command) << err_;
}

INSTANTIATE_TEST_SUITE_P(All, StartSignalsNs,
                         ::testing::Combine(::testing::Values(Where{"pid1", true}, Where{"child", false}),
                                            ::testing::Values(0, 1, 2)),
                         [](const auto& param_info) {
                           return std::string(std::get<0>(param_info.param).name) + "_" +
                                  kModes[std::get<1>(param_info.param)].name;
                         });

}  // namespace
}  // namespace agent_init
