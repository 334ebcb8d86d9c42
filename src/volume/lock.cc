#include "volume/lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <poll.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "base/atomic_file.h"
#include "base/clock.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/sys.h"
#include "process/signals.h"
#include "process/start_signals.h"
#include "version.h"
#include "volume/names.h"

namespace agent_init {
namespace {

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) < 0) return "unknown";
  return buf;
}

std::optional<Owner> ReadOwner(const Dir& aidir) {
  auto text = aidir.ReadSmallFile(names::kOwner, 4096);
  if (!text || !*text) return std::nullopt;
  return DecodeOwner(**text);
}

}  // namespace

std::string EncodeOwner(const Owner& o) {
  return EncodeRecord(
      {{"pid", o.pid}, {"host", o.host}, {"started", o.started}, {"version", o.version}, {"mode", o.mode}});
}

std::optional<Owner> DecodeOwner(std::string_view text) {
  auto r = DecodeRecord(text);
  if (!r) return std::nullopt;
  Owner o;
  o.pid = Lookup(*r, "pid").value_or("?");
  o.host = Lookup(*r, "host").value_or("?");
  o.started = Lookup(*r, "started").value_or("?");
  o.version = Lookup(*r, "version").value_or("?");
  o.mode = Lookup(*r, "mode").value_or("?");
  return o;
}

std::string DescribeOwner(const Owner& o) {
  return "pid " + o.pid + " on host " + o.host + " since " + o.started + " (agent-init " + o.version + ", " +
         o.mode + ")";
}

namespace {

// What the wait for a held lock wakes on: the release of any open of the
// lock file (inotify's IN_CLOSE_*: a flock goes with the last close of the
// open file it was taken on, and that close is the event), and the signals
// that stop a start (a signalfd; main blocks them). A holder on another
// host (a network filesystem) closes where inotify does not see it: the
// lock is tried again at least every second all the same.
class LockWait {
 public:
  explicit LockWait(int lock_fd) {
    in_.reset(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    if (in_.valid() && ::inotify_add_watch(in_.get(), sys::ProcFdPath(lock_fd).c_str(),
                                           IN_CLOSE_WRITE | IN_CLOSE_NOWRITE) < 0) {
      in_.reset();
    }
    if (!in_.valid()) log::Debug("no inotify for the lock wait: trying the lock on a timer", {});
    const sigset_t stop = StopSignals();
    signals_.reset(::signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK));
  }

  // Sleeps until an event or `timeout`; returns the stop signal that came,
  // or 0.
  int Sleep(std::chrono::milliseconds timeout) {
    struct pollfd fds[2] = {{in_.get(), POLLIN, 0}, {signals_.get(), POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(timeout.count()));
    if (n <= 0) return 0;
    if (fds[0].revents & POLLIN) {
      char events[4096];
      while (::read(in_.get(), events, sizeof events) > 0) {
      }
    }
    if (fds[1].revents & POLLIN) {
      struct signalfd_siginfo info {};
      if (::read(signals_.get(), &info, sizeof info) == sizeof info) return static_cast<int>(info.ssi_signo);
    }
    return 0;
  }

  // How long to sleep at most between tries: a second with inotify (for a
  // holder it cannot see), else backing off from 20 ms to 250 ms.
  std::chrono::milliseconds NextPause() {
    if (timer_off_) return std::chrono::hours(1);
    if (in_.valid()) return std::chrono::seconds(1);
    auto now = pause_;
    pause_ = std::min(pause_ * 2, std::chrono::milliseconds(250));
    return now;
  }

  // A test build's switch: nothing but the events ends the wait (the
  // timeout aside), so that a test shows the release wakes it.
  bool timer_off() const { return timer_off_; }

 private:
  const bool timer_off_ = TestSwitch("LOCK_WAIT_WITHOUT_TIMER");
  UniqueFd in_;       // -1 when there is none (the per-user limit, a filesystem without it)
  UniqueFd signals_;  // -1 when signalfd failed: the wait ends at its timeout only
  std::chrono::milliseconds pause_{20};
};

}  // namespace

Result<VolumeLock> VolumeLock::Acquire(const Dir& aidir, int timeout_seconds, Mode mode) {
  // Read-only: flock needs no write access, and the agent inherits this fd.
  auto opened = aidir.OpenFile(names::kLock, O_RDONLY | O_CREAT, 0600);
  if (!opened) return std::unexpected(Wrap(opened.error(), "open volume lock"));
  UniqueFd fd = std::move(*opened);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::seconds(timeout_seconds);
  auto next_report = start;
  std::optional<LockWait> wait;
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) < 0) {
    int err = errno;
    if (err == EINTR) continue;
    if (err != EWOULDBLOCK) return SysFail(err, "lock " + Q(aidir.PathOf(names::kLock)));
    // Watched before the next try: a release between the two still wakes it.
    if (!wait) {
      wait.emplace(fd.get());
      continue;
    }
    auto now = Clock::now();
    std::optional<Owner> owner = ReadOwner(aidir);
    std::string holder = owner ? DescribeOwner(*owner) : "an unknown process";
    if (now >= deadline) {
      auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - start).count();
      return Fail(Kind::kBusy,
                  "another agent-init instance is still running on this volume: its lock " +
                      Q(aidir.PathOf(names::kLock)) + " is held by " + holder + "; gave up after waiting " +
                      std::to_string(waited) + "s",
                  "wait for the other container (an old pod in its termination grace period?) to stop, or "
                  "raise --lock-timeout / AGENT_INIT_LOCK_TIMEOUT");
    }
    if (now >= next_report) {
      log::Warn("waiting for the volume: another instance holds its lock",
                {{"holder", holder},
                 {"lock", aidir.PathOf(names::kLock)},
                 {"timeout", std::to_string(timeout_seconds) + "s"}});
      next_report = now + std::chrono::seconds(10);
    }
    auto until = wait->timer_off() ? deadline : std::min(deadline, next_report);
    auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now);
    if (int sig = wait->Sleep(std::min(wait->NextPause(), left)); sig != 0) {
      Error e = MakeError(Kind::kBusy, 0,
                          "stopped by " + SignalName(sig) + " while waiting for the volume: its lock " +
                              Q(aidir.PathOf(names::kLock)) + " is held by " + holder +
                              "; the volume is unchanged and the command does not run");
      e.stopped_by = sig;
      return std::unexpected(e);
    }
  }
  // The agent inherits the lock: no FD_CLOEXEC on this one fd.
  int flags = ::fcntl(fd.get(), F_GETFD);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFD, flags & ~FD_CLOEXEC) < 0) {
    return SysFail(errno, "keep " + Q(aidir.PathOf(names::kLock)) + " open across exec");
  }
  Owner me{std::to_string(::getpid()), HostName(), UtcNow(), AGENT_INIT_VERSION, std::string(ModeName(mode))};
  // A new file renamed over the old one, never written in place: whatever
  // is planted at the name (a hard link to another file) is replaced. Only
  // informational, and only while the lock is held (what a start that waits
  // and `inspect` show): the start does not wait for it to reach the disk. A
  // power loss releases the lock, and the next holder writes its own; what
  // it leaves at the name (the old record, the new, an empty file) is shown
  // as it is, or as no owner.
  auto written = WriteFileAtomic(aidir, names::kOwner, EncodeOwner(me), 0600, Durability::kNone);
  if (!written) return std::unexpected(Wrap(written.error(), "record lock owner"));
  return VolumeLock(std::move(fd));
}

Result<LockStatus> ProbeLock(const Dir& aidir) {
  LockStatus status;
  status.last_owner = ReadOwner(aidir);
  auto opened = aidir.OpenFile(names::kLock, O_RDONLY);
  if (!opened) {
    if (opened.error().err == ENOENT) return status;
    return std::unexpected(opened.error());
  }
  status.exists = true;
  if (::flock(opened->get(), LOCK_SH | LOCK_NB) < 0) {
    if (errno != EWOULDBLOCK) return SysFail(errno, "probe lock " + Q(aidir.PathOf(names::kLock)));
    status.held = true;
  }
  return status;  // closing the fd drops the probe's shared lock
}

}  // namespace agent_init
