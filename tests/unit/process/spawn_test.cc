// Starting the supervised command (clone with CLONE_VM | CLONE_VFORK): what
// comes back for a command that runs, one that is missing and one that
// cannot be executed.
#include "process/spawn.h"

#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include "base/exit_codes.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

int ExitOf(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

SpawnRequest Request(std::vector<std::string> argv) {
  SpawnRequest r;
  r.argv = std::move(argv);
  ::sigemptyset(&r.mask);
  return r;
}

TEST(Spawn, RunsTheCommandWithItsArguments) {
  auto s = Spawn(Request({"/bin/sh", "-c", "exit $0", "7"}));
  ASSERT_TRUE(s) << s.error().msg;
  EXPECT_FALSE(s->failure);
  EXPECT_EQ(ExitOf(s->pid), 7);
}

TEST(Spawn, TheChildGetsItsOwnProcessGroup) {
  test::TempDir t;
  auto s = Spawn(Request({"/bin/sh", "-c", "ps -o pgid= -p $$ > " + t / "pgid"}));
  ASSERT_TRUE(s);
  ASSERT_EQ(ExitOf(s->pid), 0);
  EXPECT_EQ(std::stoi(test::ReadFile(t / "pgid")), s->pid);
}

TEST(Spawn, AMissingCommandIsAFailureAndTheChildExits127) {
  auto s = Spawn(Request({"agent-init-no-such-command"}));
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->failure);
  EXPECT_EQ(ExitCodeFor(s->failure->kind), 127);
  EXPECT_NE(s->failure->msg.find("agent-init-no-such-command"), std::string::npos) << s->failure->msg;
  EXPECT_EQ(ExitOf(s->pid), 127);
}

TEST(Spawn, AFileThatCannotBeExecutedIs126) {
  test::TempDir t;
  test::WriteFile(t / "not-executable", "#!/bin/sh\n", 0644);
  auto s = Spawn(Request({t / "not-executable"}));
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->failure);
  EXPECT_EQ(ExitCodeFor(s->failure->kind), 126);
  EXPECT_EQ(ExitOf(s->pid), 126);
}

TEST(Spawn, TheMaskGivenIsTheChildsAtTheExec) {
  SpawnRequest r = Request({"/bin/sleep", "30"});
  ::sigaddset(&r.mask, SIGUSR1);
  auto s = Spawn(r);
  ASSERT_TRUE(s);
  // Spawn returns after the exec: the status is sleep's own.
  std::string status = test::ReadFile("/proc/" + std::to_string(s->pid) + "/status");
  ::kill(s->pid, SIGKILL);
  EXPECT_EQ(ExitOf(s->pid), 128 + SIGKILL);
  // SIGUSR1 is signal 10: bit 9 of the blocked set.
  EXPECT_NE(status.find("SigBlk:\t0000000000000200"), std::string::npos) << status;
}

}  // namespace
}  // namespace agent_init
