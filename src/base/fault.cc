#include "base/fault.h"

#ifdef AGENT_INIT_FAULT_INJECTION

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace agent_init {

void FaultPoint(std::string_view step) {
  static long count = 0;
  static const char* chosen = std::getenv("AGENT_INIT_FAULT_STEP");
  static const bool trace = std::getenv("AGENT_INIT_FAULT_TRACE") != nullptr;
  ++count;
  if (trace)
    std::fprintf(stderr, "agent-init fault-point %ld %.*s\n", count, static_cast<int>(step.size()),
                 step.data());
  if (chosen != nullptr && std::atol(chosen) == count) {
    std::fprintf(stderr, "agent-init fault-injection: killed at step %ld (%.*s)\n", count,
                 static_cast<int>(step.size()), step.data());
    ::kill(::getpid(), SIGKILL);
  }
}

void TestHook(std::string_view step, std::string_view path) {
  const char* want = std::getenv("AGENT_INIT_TEST_HOOK_STEP");
  const char* command = std::getenv("AGENT_INIT_TEST_HOOK");
  if (want == nullptr || command == nullptr || step != want) return;
  const std::string at(path);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("AGENT_INIT_TEST_HOOK_PATH", at.c_str(), 1);
    ::execl("/bin/sh", "sh", "-c", command, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

void AnnounceSyncfs(int fd) {
  const char* name = std::getenv("AGENT_INIT_TEST_SYNCFS_NAME");
  if (name == nullptr) return;
  struct stat st;
  ::fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW);
}

bool TestSwitch(std::string_view name) {
  return std::getenv(("AGENT_INIT_TEST_" + std::string(name)).c_str()) != nullptr;
}

}  // namespace agent_init

#endif
