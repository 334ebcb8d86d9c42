// A volume on powerfs (tests/support/powerfs/powerfs.cc), the FUSE test
// filesystem that keeps what a power loss would leave: for the sweeps that
// cut the power at every step of a journaled change (tests/ns/fault_ns_test.cc).
// Mounts happen in the calling process's mount namespace: call from inside
// test::InMountNamespace.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <string>

namespace agent_init::test {

/// The powerfs binary, or "" when this build has none (no libfuse3).
std::string PowerFsBinary();

/// The name whose lookup tells powerfs that a syncfs(2) just returned: the
/// test builds of agent-init make that lookup after every syncfs when
/// AGENT_INIT_TEST_SYNCFS_NAME names it (FUSE does not pass syncfs on).
inline constexpr const char* kPowerFsSyncfsName = ".powerfs-syncfs";

class PowerFs {
 public:
  PowerFs() = default;
  PowerFs(const PowerFs&) = delete;
  PowerFs& operator=(const PowerFs&) = delete;
  ~PowerFs();

  /// The disk, a fresh tmpfs at `backing` (tmpfs never reuses an inode
  /// number, which powerfs keys its records by), and where it is mounted.
  /// What is written into backing() while nothing is mounted is on the
  /// disk. "" or what failed.
  std::string Prepare(const std::string& backing, const std::string& mountpoint);

  /// Mounts powerfs over the disk. "" or what failed.
  std::string Mount();

  /// Everything as it is now made durable (as a syncfs would).
  void Sync() const;

  /// The power loss: unmounted, the backing directory becomes what was
  /// durable, and the filesystem is mounted again over it, as after a
  /// reboot. "" or what failed.
  std::string PowerLoss();

  /// Unmounts (a power loss as well); nothing is mounted afterwards.
  std::string Unmount();

  const std::string& backing() const { return backing_; }

  /// powerfs's account of the last power loss.
  const std::string& LastReport() const { return report_; }

 private:
  std::string backing_, mountpoint_, report_;
  pid_t daemon_ = -1;
  int err_ = -1;  // the daemon's stderr
};

}  // namespace agent_init::test

/// Skips the test, loudly, without powerfs or /dev/fuse.
#define REQUIRE_POWERFS()                                                                              \
  do {                                                                                                 \
    if (::agent_init::test::PowerFsBinary().empty() || ::access("/dev/fuse", R_OK | W_OK) != 0) {      \
      GTEST_SKIP() << "SKIPPED: needs powerfs (libfuse3-dev: scripts/setup test installs it) and /dev/fuse"; \
    }                                                                                                  \
  } while (0)
