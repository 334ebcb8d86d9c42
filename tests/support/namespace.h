// Running a test body in a child process with its own mount namespace, so
// that real mounts never touch the host's mount table.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace agent_init::test {

/// Why namespace tests cannot run here (not root, no unshare), or nullopt.
std::optional<std::string> MountNamespaceUnavailable();

/// Forks and runs `body` in the child, which returns "" on success or a
/// failure description (or any answer for the caller to look at). Returns
/// the child's answer, "" for success, or a description of how it died.
std::string InChild(const std::function<std::string()>& body);

/// Forks; the child unshares its mount namespace, makes every mount private
/// and runs `body`. The body returns "" on success or a failure description.
/// Returns the child's answer (or a description of how it died).
std::string InMountNamespace(const std::function<std::string()>& body);

/// Makes the system call `nr` fail with ENOSYS in the calling process and
/// everything it execs from now on (a seccomp filter, with no_new_privs):
/// an older kernel, or a seccomp profile written before the call existed.
/// False when the filter could not be installed.
bool DenySyscall(long nr);

/// Drops CAP_SYS_ADMIN from the calling process's effective and permitted
/// sets (and the bounding set), as a container without it would have.
bool DropSysAdmin();

}  // namespace agent_init::test

/// Skips the test, loudly, when mount namespaces are unavailable.
#define REQUIRE_MOUNT_NAMESPACE()                                           \
  do {                                                                      \
    if (auto why = ::agent_init::test::MountNamespaceUnavailable()) {       \
      GTEST_SKIP() << "SKIPPED: needs root and mount namespaces: " << *why; \
    }                                                                       \
  } while (0)

/// Skips the test, loudly, without btrfs-progs.
#define REQUIRE_MKFS_BTRFS()                                                              \
  do {                                                                                    \
    if (::agent_init::test::Shell("command -v mkfs.btrfs >/dev/null") != 0) {             \
      GTEST_SKIP() << "SKIPPED: no mkfs.btrfs (scripts/setup test installs btrfs-progs)"; \
    }                                                                                     \
  } while (0)

/// In a namespace body: returns a failure description unless `cond` holds.
#define NS_CHECK(cond, what)                                                                  \
  do {                                                                                        \
    if (!(cond)) return std::string(__FILE__ ":") + std::to_string(__LINE__) + ": " + (what); \
  } while (0)
