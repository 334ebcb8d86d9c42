#include "volume/lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "base/atomic_file.h"
#include "base/clock.h"
#include "base/log.h"
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

Result<VolumeLock> VolumeLock::Acquire(const Dir& aidir, int timeout_seconds, Mode mode) {
  // Read-only: flock needs no write access, and the agent inherits this fd.
  auto opened = aidir.OpenFile(names::kLock, O_RDONLY | O_CREAT, 0600);
  if (!opened) return std::unexpected(Wrap(opened.error(), "open volume lock"));
  UniqueFd fd = std::move(*opened);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::seconds(timeout_seconds);
  auto next_report = start;
  auto pause = std::chrono::milliseconds(20);
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) < 0) {
    int err = errno;
    if (err == EINTR) continue;
    if (err != EWOULDBLOCK) return SysFail(err, "lock " + Q(aidir.PathOf(names::kLock)));
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
    std::this_thread::sleep_for(
        std::min(pause, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now)));
    pause = std::min(pause * 2, std::chrono::milliseconds(250));
  }
  // The agent inherits the lock: no FD_CLOEXEC on this one fd.
  int flags = ::fcntl(fd.get(), F_GETFD);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFD, flags & ~FD_CLOEXEC) < 0) {
    return SysFail(errno, "keep " + Q(aidir.PathOf(names::kLock)) + " open across exec");
  }
  Owner me{std::to_string(::getpid()), HostName(), UtcNow(), AGENT_INIT_VERSION, std::string(ModeName(mode))};
  // A new file renamed over the old one, never written in place: whatever
  // is planted at the name (a hard link to another file) is replaced. Only
  // informational: the start does not wait for the name to reach the disk.
  auto written = WriteFileAtomic(aidir, names::kOwner, EncodeOwner(me), 0600, NameSync::kLater);
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
