#include "process/supervise.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include "base/log.h"
#include "base/sys.h"
#include "base/unique_fd.h"
#include "process/proc.h"
#include "process/signals.h"
#include "process/spawn.h"

namespace agent_init {
namespace {

using Clock = std::chrono::steady_clock;

// How long to wait for SIGKILLed processes to disappear before giving up on
// them (processes in uninterruptible sleep); as PID 1 the kernel kills them
// when we exit anyway.
constexpr auto kKillWait = std::chrono::seconds(5);

// As PID 1 or a subreaper, every descendant left after the command exited is
// a child of ours or below one: without children there is nothing to stop,
// and no need to scan /proc.
bool HaveChildren() {
  siginfo_t info{};
  return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Closes every fd at 3 or above except `keep`: the supervisor must not hold
// the agent's inherited descriptors open for its whole life.
void CloseInheritedFds(std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned next = 3;
  for (int fd : keep) {
    if (fd < static_cast<int>(next)) continue;
    if (static_cast<unsigned>(fd) > next) sys::CloseRange(next, static_cast<unsigned>(fd) - 1);
    next = static_cast<unsigned>(fd) + 1;
  }
  sys::CloseRange(next, ~0U);
}

class Supervisor {
 public:
  Supervisor(const SuperviseOptions& options, int sfd, pid_t child, bool on_tty, bool gave_tty)
      : options_(options), sfd_(sfd), child_(child), on_tty_(on_tty), gave_tty_(gave_tty) {}

  int Run() {
    for (;;) {
      int timeout = -1;
      if (deadline_) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline_ - Clock::now()).count();
        timeout = static_cast<int>(std::max<long long>(left, 0));
      }
      struct pollfd pfd[2] = {{sfd_, POLLIN, 0}, {options_.watcher ? options_.watcher->fd() : -1, POLLIN, 0}};
      int n = ::poll(pfd, options_.watcher ? 2 : 1, timeout);
      if (n < 0 && errno != EINTR) log::Warn("poll failed", {{"error", std::strerror(errno)}});
      if (n > 0 && options_.watcher && (pfd[1].revents & POLLIN)) options_.watcher->OnReadable();
      if (n > 0 && (pfd[0].revents & POLLIN)) DrainSignals();
      if (deadline_ && Clock::now() >= *deadline_) OnDeadline();
      if (main_status_ && Settle()) break;
    }
    // The terminal comes back only from the command's group: after `bg` it
    // belongs to the shell.
    if (gave_tty_ && ::tcgetpgrp(STDIN_FILENO) == child_) ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
    return ExitCodeOf(*main_status_);
  }

 private:
  void DrainSignals() {
    struct signalfd_siginfo info[16];
    for (;;) {
      ssize_t n = ::read(sfd_, info, sizeof info);
      if (n <= 0) return;
      for (size_t i = 0; i < static_cast<size_t>(n) / sizeof info[0]; ++i) {
        int sig = static_cast<int>(info[i].ssi_signo);
        // SIGPIPE or SIGXFSZ that agent-init's own writes caused (a closed
        // log pipe) are not the agent's business.
        if ((sig == SIGPIPE || sig == SIGXFSZ) && static_cast<pid_t>(info[i].ssi_pid) == ::getpid()) continue;
        if (sig == SIGCHLD) {
          Reap();
        } else {
          Forward(sig);
        }
      }
    }
  }

  // Every exited child, orphans included, as it exits: SIGCHLD is not
  // queued, so one notification may stand for a burst of exits. Stops are
  // reported too (WUNTRACED): the command's, for job control.
  void Reap() {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0) {
      if (pid != child_ || main_status_) continue;
      if (WIFSTOPPED(status)) {
        OnCommandStopped(WSTOPSIG(status));
        continue;
      }
      main_status_ = status;
      log::Info("the command exited",
                {{"pid", std::to_string(pid)}, {"status", std::to_string(ExitCodeOf(status))}});
      if (options_.watcher) options_.watcher->OnCommandExited();
    }
  }

  // Under a terminal the command stopped (Ctrl-Z reached its foreground
  // group, it read the terminal from the background, or it was sent a stop
  // signal): agent-init stops with it, so that the shell sees the whole job
  // stopped. A stop agent-init asked for itself, and already followed, is
  // not followed twice.
  void OnCommandStopped(int sig) {
    log::Debug("the command stopped", {{"signal", SignalName(sig)}});
    if (!on_tty_) return;
    if (followed_own_stop_) {
      followed_own_stop_ = false;
      return;
    }
    // Reported late (after a SIGCONT already continued it): not stopped now.
    if (auto now = ReadProcStat(child_); now && now->state != 'T') {
      log::Debug("the command runs again; not stopping");
      return;
    }
    StopWithTheCommand();
  }

  void Forward(int sig) {
    if (main_status_) {
      log::Debug("signal arrived after the command exited; not forwarded", {{"signal", SignalName(sig)}});
      return;
    }
    if (sig == SIGCONT) OnContinued();
    auto mapped = options_.signal_map.find(sig);
    int to = mapped == options_.signal_map.end() ? sig : mapped->second;
    if (to == 0) {
      log::Debug("dropped a signal (--signal-map)", {{"signal", SignalName(sig)}});
      return;
    }
    pid_t target = options_.signal_group ? -child_ : child_;
    if (::kill(target, to) < 0 && errno != ESRCH) {
      log::Warn("could not forward a signal", {{"signal", SignalName(to)}, {"error", std::strerror(errno)}});
    }
    log::Debug("forwarded a signal", {{"signal", SignalName(sig)}, {"as", SignalName(to)}});
    if (sig == SIGTERM) TermDescendants(/*spare_signalled=*/true, Descendants(::getpid()));
    if (on_tty_ && IsStopSignal(to) && StopWithTheCommand()) followed_own_stop_ = true;
  }

  static bool IsStopSignal(int sig) {
    return sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU || sig == SIGSTOP;
  }

  // Shell job control: the command was asked to stop, or stopped, so its
  // parent stops too, and the shell sees the whole job stopped. SIGCONT
  // wakes us whether blocked or not, and stays pending for the signalfd: it
  // is forwarded like any other signal. A PID namespace's init cannot stop
  // itself (the kernel drops SIGSTOP from inside the namespace); the command
  // is stopped anyway. True when agent-init stopped (and was continued).
  bool StopWithTheCommand() {
    if (::getpid() == 1) {
      log::Debug("as PID 1 agent-init cannot stop itself; the command stopped alone");
      return false;
    }
    // A stop signal discards a pending SIGCONT: one already here means the
    // job was continued before agent-init could stop.
    sigset_t pending;
    if (::sigpending(&pending) == 0 && ::sigismember(&pending, SIGCONT) == 1) {
      log::Debug("continued before stopping with the command");
      return false;
    }
    log::Debug("stopping with the command (job control)");
    log::Flush();
    ::kill(::getpid(), SIGSTOP);
    return true;
  }

  // SIGCONT: after `fg` the shell gave the terminal to agent-init's group;
  // the command gets it before it continues (also when agent-init started
  // in the background and never had it). After `bg` the shell keeps it.
  void OnContinued() {
    followed_own_stop_ = false;
    if (!on_tty_ || ::tcgetpgrp(STDIN_FILENO) != ::getpgrp()) return;
    pid_t group = ::getpgid(child_);
    if (group > 0 && ::tcsetpgrp(STDIN_FILENO, group) < 0) {
      log::Warn("could not give the terminal to the command", {{"error", std::strerror(errno)}});
      return;
    }
    gave_tty_ = true;  // and it comes back at exit
  }

  // SIGTERM to every descendant, then SIGKILL after the grace period. When
  // a forwarded signal already reached the command (and, with
  // --signal-group, its whole group), those are spared: each process gets
  // one signal, and the command decides for itself.
  void TermDescendants(bool spare_signalled, const std::vector<pid_t>& all) {
    size_t sent = 0;
    for (pid_t p : all) {
      if (spare_signalled && (p == child_ || (options_.signal_group && ::getpgid(p) == child_))) continue;
      if (!termed_.insert(p).second) continue;  // a second sweep: once is enough
      if (::kill(p, SIGTERM) == 0) ++sent;
    }
    if (sent > 0) {
      log::Info("stopping the remaining processes",
                {{"count", std::to_string(sent)}, {"grace", std::to_string(options_.grace_seconds) + "s"}});
    }
    if (!deadline_) deadline_ = Clock::now() + std::chrono::seconds(options_.grace_seconds);
  }

  void OnDeadline() {
    deadline_.reset();
    if (killed_at_) return;
    size_t killed = 0;
    for (pid_t p : Descendants(::getpid())) {
      if (!main_status_ && p == child_) continue;  // the command decides for itself
      if (::kill(p, SIGKILL) == 0) ++killed;
    }
    if (killed > 0)
      log::Warn("killed processes still running after the grace period", {{"count", std::to_string(killed)}});
    if (main_status_) killed_at_ = Clock::now();
  }

  // After the command exited: true once nothing is left below us, and
  // every child reaped.
  bool Settle() {
    Reap();
    if (!HaveChildren()) return true;
    // One scan of /proc per wake-up.
    std::vector<pid_t> left = Descendants(::getpid());
    if (left.empty()) {
      // Children are left that /proc shows as dead (exiting, or zombies
      // re-parented to us since the reap above): each one's SIGCHLD wakes
      // us to reap it, so that none is left to whoever inherits them (our
      // parent, when agent-init is a subreaper). Bounded, for a /proc that
      // shows nothing at all.
      if (!dying_since_) dying_since_ = Clock::now();
      if (Clock::now() - *dying_since_ >= kKillWait) {
        log::Warn("giving up waiting for children that /proc does not show");
        return true;
      }
      if (!deadline_) deadline_ = *dying_since_ + kKillWait;
      return false;
    }
    dying_since_.reset();
    if (!sweep_started_) {
      sweep_started_ = true;
      // A grace period a SIGTERM already started keeps running, not anew.
      TermDescendants(/*spare_signalled=*/false, left);
    }
    if (killed_at_ && Clock::now() - *killed_at_ > kKillWait) {
      log::Warn("giving up waiting for processes that do not die");
      return true;
    }
    if (killed_at_ && !deadline_) deadline_ = Clock::now() + std::chrono::milliseconds(100);
    return false;
  }

  const SuperviseOptions& options_;
  int sfd_;
  pid_t child_;
  bool on_tty_;  // job control applies only under a terminal
  bool gave_tty_;
  bool followed_own_stop_ = false;  // stopped after forwarding a stop: the command's report is no news
  std::optional<int> main_status_;
  std::optional<Clock::time_point> deadline_;
  std::optional<Clock::time_point> killed_at_;
  bool sweep_started_ = false;
  std::optional<Clock::time_point> dying_since_;  // children left that /proc shows none of
  std::set<pid_t> termed_;  // already sent SIGTERM by a sweep
};

}  // namespace

Result<int> Supervise(const std::vector<std::string>& argv, const std::optional<Credentials>& user,
                      const SuperviseOptions& options) {
  const CallerSignals& in = options.caller;
  // Every signal is blocked and read from a signalfd: nothing runs in a
  // handler, and a signal that arrives before the child exists waits.
  sigset_t all;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  // An inherited SIGCHLD=SIG_IGN makes the kernel reap children itself and
  // waitpid never reports the command (tini and catatonit hang there).
  if (in.chld_ignored) ::signal(SIGCHLD, SIG_DFL);
  // When the command never ran, the caller gets its signal state back.
  auto give_back = [&] {
    if (in.chld_ignored) ::signal(SIGCHLD, SIG_IGN);
    ::sigprocmask(SIG_SETMASK, &in.mask, nullptr);
  };
  int raw_sfd = ::signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
  if (raw_sfd < 0) {
    int err = errno;
    give_back();
    return SysFail(err, "signalfd failed; cannot supervise", Kind::kNotExecutable);
  }
  UniqueFd sfd(raw_sfd);
  if (::getpid() != 1 && ::prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
    log::Warn("cannot become a child subreaper: orphans of the command will not be reaped by agent-init",
              {{"error", std::strerror(errno)}});
  }
  // Hand the terminal to the command only when we are in its foreground.
  const bool on_tty = ::isatty(STDIN_FILENO);
  bool take_tty = on_tty && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
  log::Flush();
  auto spawned = Spawn(
      {.argv = argv, .user = user, .mask = in.mask, .chld_ignored = in.chld_ignored, .take_tty = take_tty});
  if (!spawned) {
    give_back();
    return std::unexpected(spawned.error());
  }
  const pid_t child = spawned->pid;
  if (spawned->failure) {
    // The child ran nothing and has exited with this error's code: reap it,
    // and the caller reports the error like any failure before the command.
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    log::Info("the command exited",
              {{"pid", std::to_string(child)}, {"status", std::to_string(ExitCodeOf(status))}});
    if (take_tty) ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
    give_back();
    return std::unexpected(*spawned->failure);
  }
  // Spawn returns after the child's exec: its process group is set.
  if (::chdir("/") < 0) log::Debug("chdir / failed", {{"error", std::strerror(errno)}});
  std::vector<int> keep = options.keep_fds;
  keep.push_back(sfd.get());
  if (options.watcher) {
    for (int fd : options.watcher->fds()) keep.push_back(fd);
  }
  CloseInheritedFds(keep);
  log::Debug("supervising", {{"pid", std::to_string(child)}, {"command", argv.front()}});
  return Supervisor(options, sfd.get(), child, on_tty, take_tty).Run();
}

}  // namespace agent_init
