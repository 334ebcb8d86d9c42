#include "process/spawn.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstring>

#include "process/exec.h"
#include "process/privileges.h"

extern char** environ;

namespace agent_init {
namespace {

// The child's stack: it calls stat, access, a few id and signal system calls
// and execve, nothing deep.
constexpr size_t kChildStack = 64 * 1024;

// Everything the child reads, prepared by the parent, and what the child
// reports back through the memory they share.
struct Plan {
  const SpawnRequest* request = nullptr;
  CommandSearch search;
  std::vector<char*> argv;
  std::vector<char*> envp;
  enum class Failed { kNone, kSwitch, kSearch, kExec } failed = Failed::kNone;
  SwitchOutcome switched;
  Found found;
  int exec_errno = 0;
};

// Not instrumented by AddressSanitizer: it runs on a stack ASan does not
// know, and ASan's bookkeeping before _exit would warn of false positives.
__attribute__((no_sanitize("address"))) int Child(void* arg) {
  Plan& plan = *static_cast<Plan*>(arg);
  const SpawnRequest& request = *plan.request;
  // Its own process group, so that --signal-group and the terminal's job
  // control address the command and what it starts, not agent-init.
  ::setpgid(0, 0);
  if (request.take_tty) ::tcsetpgrp(STDIN_FILENO, ::getpgrp());  // allowed: SIGTTOU is blocked here
  if (request.chld_ignored) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGCHLD, &ignore, nullptr);
  }
  if (request.user) {
    plan.switched = SwitchIds(*request.user);
    if (plan.switched.failed != SwitchStep::kDone) {
      plan.failed = Plan::Failed::kSwitch;
      ::_exit(ExitCodeFor(SwitchFailureKind(plan.switched)));
    }
  }
  // After the switch: the user's permissions decide what is executable.
  plan.found = FindProgram(plan.search);
  if (plan.found.index < 0) {
    plan.failed = Plan::Failed::kSearch;
    ::_exit(ExitCodeFor(SearchFailureKind(plan.found)));
  }
  // The caller's mask comes back last: a signal sent to the child before
  // this stays pending and is delivered now, never lost.
  ::sigprocmask(SIG_SETMASK, &request.mask, nullptr);
  ::execve(plan.search.candidates[static_cast<size_t>(plan.found.index)].c_str(), plan.argv.data(),
           plan.envp.data());
  plan.exec_errno = errno;
  plan.failed = Plan::Failed::kExec;
  ::_exit(ExitCodeFor(ExecFailureKind(plan.exec_errno)));
}

}  // namespace

Result<Spawned> Spawn(const SpawnRequest& request) {
  std::optional<std::string> home;
  if (request.user) {
    if (auto can = CheckCanSwitch(*request.user); !can) return std::unexpected(can.error());
    home = "HOME=" + HomeFor(*request.user);
  }
  Plan plan;
  plan.request = &request;
  plan.search = SearchFor(request.argv.front());
  for (const auto& a : request.argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  for (char** e = environ; *e != nullptr; ++e) {
    if (!home || std::strncmp(*e, "HOME=", 5) != 0) plan.envp.push_back(*e);  // the user's replaces the caller's
  }
  if (home) plan.envp.push_back(home->data());
  plan.envp.push_back(nullptr);

  // The stack, above a guard page: an overflow faults instead of writing
  // into our memory.
  const size_t guard = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t size = guard + kChildStack;
  void* stack = ::mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    return SysFail(errno, "allocate a stack to start " + Q(request.argv.front()), Kind::kNotExecutable);
  }
  if (::mprotect(static_cast<char*>(stack) + guard, kChildStack, PROT_READ | PROT_WRITE) < 0) {
    int err = errno;
    ::munmap(stack, size);
    return SysFail(err, "allocate a stack to start " + Q(request.argv.front()), Kind::kNotExecutable);
  }
  // The child's setuid marks the memory it shares with us non-dumpable
  // (fs.suid_dumpable); ours stays what it was, as after a fork.
  const int dumpable = request.user ? ::prctl(PR_GET_DUMPABLE) : -1;
  // Returns once the child has called execve successfully or exited.
  pid_t pid = ::clone(Child, static_cast<char*>(stack) + size, CLONE_VM | CLONE_VFORK | SIGCHLD, &plan);
  int clone_errno = errno;
  ::munmap(stack, size);
  if (dumpable >= 0) ::prctl(PR_SET_DUMPABLE, dumpable);
  if (pid < 0) {
    return std::unexpected(MakeError(Kind::kNotExecutable, clone_errno, "start " + Q(request.argv.front()),
                                     "the system may be out of processes or memory (ulimit -u, pids.max)"));
  }

  Spawned spawned;
  spawned.pid = pid;
  switch (plan.failed) {
    case Plan::Failed::kNone:
      break;
    case Plan::Failed::kSwitch:
      spawned.failure = SwitchFailure(*request.user, plan.switched);
      break;
    case Plan::Failed::kSearch:
      spawned.failure = SearchFailure(plan.search, plan.found);
      break;
    case Plan::Failed::kExec:
      spawned.failure =
          ExecFailure(plan.search.candidates[static_cast<size_t>(plan.found.index)], plan.exec_errno);
      break;
  }
  return spawned;
}

}  // namespace agent_init
