#include "volume/lock.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace agent_init {
namespace {

// Holds the lock in a child process for `seconds`, like another container.
pid_t HoldInChild(const std::string& dir, double seconds) {
  int ready[2];
  if (::pipe(ready) < 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    auto d = Dir::OpenTrusted(dir);
    auto lock = VolumeLock::Acquire(*d, 0, Mode::kExec);
    (void)!::write(ready[1], lock ? "1" : "0", 1);
    ::usleep(static_cast<useconds_t>(seconds * 1e6));
    _exit(0);
  }
  char c = 0;
  (void)!::read(ready[0], &c, 1);
  ::close(ready[0]);
  ::close(ready[1]);
  return c == '1' ? pid : -1;
}

TEST(Lock, SecondInstanceWaitsThenFailsWith75NamingTheHolder) {
  test::TempDir t;
  pid_t holder = HoldInChild(t.path(), 3);
  ASSERT_GT(holder, 0);
  auto dir = Dir::OpenTrusted(t.path());
  auto start = std::chrono::steady_clock::now();
  auto second = VolumeLock::Acquire(*dir, 1, Mode::kExec);
  auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(second);
  EXPECT_EQ(ExitCodeFor(second.error().kind), 75);
  EXPECT_NE(second.error().msg.find("another agent-init instance is still running on this volume"),
            std::string::npos);
  EXPECT_NE(second.error().msg.find("pid " + std::to_string(holder)), std::string::npos)
      << second.error().msg;
  EXPECT_NE(second.error().msg.find("waiting 1s"), std::string::npos) << second.error().msg;
  EXPECT_GE(waited, std::chrono::milliseconds(900));
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
}

TEST(Lock, TimeoutZeroFailsAtOnce) {
  test::TempDir t;
  pid_t holder = HoldInChild(t.path(), 3);
  ASSERT_GT(holder, 0);
  auto dir = Dir::OpenTrusted(t.path());
  auto second = VolumeLock::Acquire(*dir, 0, Mode::kExec);
  ASSERT_FALSE(second);
  EXPECT_EQ(ExitCodeFor(second.error().kind), 75);
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
}

TEST(Lock, ProceedsWhenTheHolderEndsWithinTheTimeout) {
  test::TempDir t;
  pid_t holder = HoldInChild(t.path(), 0.5);
  ASSERT_GT(holder, 0);
  auto dir = Dir::OpenTrusted(t.path());
  auto second = VolumeLock::Acquire(*dir, 10, Mode::kExec);
  ASSERT_TRUE(second) << second.error().msg;
  ::waitpid(holder, nullptr, 0);
  auto owner = DecodeOwner(test::ReadFile(t / "owner"));
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->pid, std::to_string(::getpid()));
}

// The owner record is replaced whole (a new file renamed over it): nothing
// of a longer record from an earlier holder is left.
TEST(Lock, ALongerOwnerRecordIsReplacedWhole) {
  test::TempDir t;
  test::WriteFile(t / "owner", "pid 999999\nhost " + std::string(300, 'h') +
                                   "\nstarted 2020-01-01T00:00:00Z\nversion 0.0.1\nmode prepare\n");
  auto dir = Dir::OpenTrusted(t.path());
  auto lock = VolumeLock::Acquire(*dir, 0, Mode::kExec);
  ASSERT_TRUE(lock) << lock.error().msg;
  std::string text = test::ReadFile(t / "owner");
  EXPECT_EQ(text.find("hhh"), std::string::npos) << text;
  auto owner = DecodeOwner(text);
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->pid, std::to_string(::getpid()));
  EXPECT_EQ(owner->mode, "exec");
}

TEST(Lock, TheFdSurvivesExec) {
  test::TempDir t;
  auto dir = Dir::OpenTrusted(t.path());
  auto lock = VolumeLock::Acquire(*dir, 0, Mode::kExec);
  ASSERT_TRUE(lock);
  EXPECT_EQ(::fcntl(lock->fd(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST(Lock, ProbeSeesHolderAndLastOwnerWithoutTakingIt) {
  test::TempDir t;
  auto dir = Dir::OpenTrusted(t.path());
  auto none = ProbeLock(*dir);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->exists);
  pid_t holder = HoldInChild(t.path(), 3);
  auto held = ProbeLock(*dir);
  ASSERT_TRUE(held);
  EXPECT_TRUE(held->held);
  ASSERT_TRUE(held->last_owner);
  EXPECT_EQ(held->last_owner->pid, std::to_string(holder));
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  auto free = ProbeLock(*dir);
  ASSERT_TRUE(free);
  EXPECT_FALSE(free->held);
  EXPECT_TRUE(free->last_owner) << "a stale owner record of a dead holder is normal";
}

TEST(Lock, ALockFileThatIsASymlinkIsRefused) {
  test::TempDir t;
  test::WriteFile(t / "outside", "keep");
  test::MakeDirs(t / "ai");
  test::Symlink(t / "outside", t / "ai/lock");
  auto dir = Dir::OpenTrusted(t / "ai");
  auto lock = VolumeLock::Acquire(*dir, 0, Mode::kExec);
  ASSERT_FALSE(lock);
  EXPECT_EQ(ExitCodeFor(lock.error().kind), 77);
  EXPECT_EQ(test::ReadFile(t / "outside"), "keep");
}

TEST(Lock, ALockFileThatIsAFifoIsRefused) {
  test::TempDir t;
  ASSERT_EQ(::mkfifo((t / "lock").c_str(), 0600), 0);
  auto dir = Dir::OpenTrusted(t.path());
  auto lock = VolumeLock::Acquire(*dir, 0, Mode::kExec);
  ASSERT_FALSE(lock);
  EXPECT_EQ(ExitCodeFor(lock.error().kind), 65);
}

}  // namespace
}  // namespace agent_init
