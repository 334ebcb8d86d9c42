// One owner of the volume at a time: an exclusive flock(2) on
// STATE/.agent-init/lock, held for the whole life of the agent. The fd has no
// FD_CLOEXEC, so after the exec the agent holds it and the kernel releases it
// when the agent (and every process that inherited it) exits. A small owner
// file beside it says who holds it; it may be stale, the lock is the truth.
#pragma once

#include <optional>
#include <string>

#include "base/dir.h"
#include "base/error.h"
#include "base/record.h"
#include "base/unique_fd.h"
#include "config.h"

namespace agent_init {

struct Owner {
  std::string pid;
  std::string host;
  std::string started;  // UTC, ISO 8601
  std::string version;  // agent-init's
  std::string mode;     // exec, prepare, supervise, restore
};

std::string EncodeOwner(const Owner& owner);
std::optional<Owner> DecodeOwner(std::string_view text);

/// "pid 12 on host node-1 since 2026-12-02T17:00:00Z (agent-init 0.1.0)".
std::string DescribeOwner(const Owner& owner);

class VolumeLock {
 public:
  VolumeLock() = default;

  /// Takes the lock in the bookkeeping directory `aidir`, waiting up to `timeout_seconds` (0: fail at once)
  /// while another instance holds it, then records this process as the owner. Busy past the timeout: kBusy
  /// (exit 75). A lock file that is a symlink or not a regular file is refused.
  static Result<VolumeLock> Acquire(const Dir& aidir, int timeout_seconds, Mode mode);

  /// The lock fd, inheritable across exec (no FD_CLOEXEC).
  int fd() const { return fd_.get(); }

  /// Gives up ownership of the fd without closing it: for exec, where the
  /// agent keeps holding the lock.
  int ReleaseToExec() { return fd_.release(); }

 private:
  explicit VolumeLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

struct LockStatus {
  bool exists = false;
  bool held = false;  // another process holds it right now
  std::optional<Owner> last_owner;
};

/// For inspect and restore: is the lock held, and who held it last? Changes
/// nothing (a shared, non-blocking probe that is released at once).
Result<LockStatus> ProbeLock(const Dir& aidir);

}  // namespace agent_init
