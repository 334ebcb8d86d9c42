#include "process/start_signals.h"

#include <time.h>

#include <initializer_list>

namespace agent_init {

CallerSignals BlockSignals() {
  CallerSignals caller;
  sigset_t block;
  ::sigfillset(&block);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT, SIGTTIN, SIGTTOU})
    ::sigdelset(&block, sig);
  ::sigprocmask(SIG_BLOCK, &block, &caller.mask);
  struct sigaction sa {};
  caller.chld_ignored = ::sigaction(SIGCHLD, nullptr, &sa) == 0 && sa.sa_handler == SIG_IGN;
  return caller;
}

void RestoreSignals(const CallerSignals& caller) {
  if (caller.chld_ignored) ::signal(SIGCHLD, SIG_IGN);
  ::sigprocmask(SIG_SETMASK, &caller.mask, nullptr);
}

sigset_t StopSignals() {
  sigset_t set;
  ::sigemptyset(&set);
  ::sigaddset(&set, SIGTERM);
  ::sigaddset(&set, SIGINT);
  return set;
}

int TakeStopSignal() {
  const sigset_t stop = StopSignals();
  sigset_t pending;
  if (::sigpending(&pending) < 0) return 0;
  for (int sig : {SIGTERM, SIGINT}) {
    if (!::sigismember(&pending, sig)) continue;
    const struct timespec now {};
    int taken = ::sigtimedwait(&stop, nullptr, &now);
    return taken > 0 ? taken : sig;
  }
  return 0;
}

}  // namespace agent_init
