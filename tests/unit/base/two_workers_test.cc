#include "base/two_workers.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace agent_init {
namespace {

// Every item runs exactly once, in one process or the other: each makes a
// file named after it and its process (O_EXCL: a second run of one item in
// the same process fails, and both processes' files are counted).
TEST(TwoWorkers, EveryItemRunsOnceAndBothWorkersTakeSome) {
  test::TempDir t;
  const std::size_t n = 400;
  const pid_t self = ::getpid();
  auto item = [&](std::size_t i) {
    const std::string who = ::getpid() == self ? "parent" : "child";
    int fd = ::open((t / (std::to_string(i) + "." + who)).c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) return false;
    ::close(fd);
    return true;
  };
  std::optional<std::string> report;
  ASSERT_TRUE(RunOnTwoWorkers(
      n, true, item, [] { return std::string("from the child"); }, &report));
  ASSERT_TRUE(report.has_value()) << "no child ran";
  EXPECT_EQ(*report, "from the child");
  std::size_t parent = 0, child = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool p = ::access((t / (std::to_string(i) + ".parent")).c_str(), F_OK) == 0;
    const bool c = ::access((t / (std::to_string(i) + ".child")).c_str(), F_OK) == 0;
    EXPECT_NE(p, c) << "item " << i << " ran " << (p ? "twice" : "never");
    parent += p;
    child += c;
  }
  EXPECT_GT(child, 0u);
  EXPECT_GT(parent, 0u);
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);  // reaped
  EXPECT_EQ(errno, ECHILD);
}

TEST(TwoWorkers, OneWorkerWhenNotAskedForTwo) {
  const pid_t self = ::getpid();
  std::size_t ran = 0;
  bool elsewhere = false;
  std::optional<std::string> report;
  ASSERT_TRUE(RunOnTwoWorkers(
      50, false,
      [&](std::size_t) {
        ++ran;
        elsewhere |= ::getpid() != self;
        return true;
      },
      [] { return std::string("never"); }, &report));
  EXPECT_EQ(ran, 50u);
  EXPECT_FALSE(elsewhere);
  EXPECT_FALSE(report.has_value());
}

// An item that fails stops both workers: neither takes another.
TEST(TwoWorkers, AFailedItemStopsBoth) {
  test::TempDir t;
  auto item = [&](std::size_t i) {
    int fd = ::open((t / std::to_string(i)).c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) ::close(fd);
    return i != 10;
  };
  std::optional<std::string> report;
  ASSERT_TRUE(RunOnTwoWorkers(
      100000, true, item, [] { return std::string(); }, &report));
  std::size_t made = 0;
  for (std::size_t i = 0; i < 100000; ++i) made += ::access((t / std::to_string(i)).c_str(), F_OK) == 0;
  EXPECT_LT(made, 1000u);  // taken while the stop was on its way, at most a few each
}

// A child that dies before its report is a failure, and is reaped.
TEST(TwoWorkers, AChildThatDiesIsAFailure) {
  const pid_t self = ::getpid();
  std::optional<std::string> report;
  const bool whole = RunOnTwoWorkers(
      1000, true,
      [&](std::size_t) {
        if (::getpid() != self) ::_exit(3);
        ::usleep(100);
        return true;
      },
      [] { return std::string("never sent"); }, &report);
  EXPECT_FALSE(whole);
  EXPECT_FALSE(report.has_value());
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
}

}  // namespace
}  // namespace agent_init
