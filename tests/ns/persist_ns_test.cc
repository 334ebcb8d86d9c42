// Real mounts in private mount namespaces: the volume is a noexec tmpfs, the
// image is a fixture home (or an overlayfs), and each test runs its body in a
// child that unshared its mount namespace (tests/support/namespace.h).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>

#include "base/mount_table.h"
#include "commands/prepare.h"
#include "home_fixture.h"
#include "namespace.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

using test::InMountNamespace;

using test::kVh;

class PersistNs : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_MOUNT_NAMESPACE();
    test::Make711Home(t_ / "home");
    test::MakeDirs(t_ / "state");
  }

  Config MakeConfig(Method method) {
    Config c;
    c.home = t_ / "home";
    c.state = t_ / "state";
    c.method = method;
    return c;
  }

  // In the child: the volume, as hostPath volumes often are.
  std::string MountNoexecVolume() {
    if (::mount("tmpfs", (t_ / "state").c_str(), "tmpfs", MS_NOEXEC | MS_NOSUID | MS_NODEV, "mode=0755") <
        0) {
      return std::string("mount tmpfs: ") + std::strerror(errno);
    }
    return "";
  }

  size_t MountsAt(const std::string& path) {
    auto table = MountTable::Read();
    return table ? table->CountAt(path) : 999;
  }

  test::TempDir t_;
};

TEST_F(PersistNs, BindMethodPutsTheVolumeOnTheVersionedHome) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    auto r = Prepare(MakeConfig(Method::kBind), std::nullopt, {});
    NS_CHECK(r, "prepare: " + r.error().msg);
    NS_CHECK(r->placement == Placement::kBind, "placement");
    NS_CHECK(MountsAt(t_ / kVh + "/run") == 1, "one mount on VH/run");
    test::WriteFile(t_ / kVh + "/run/agent.id", "ID-1");
    NS_CHECK(test::ReadFile(t_ / "state/run/agent.id") == "ID-1", "write through VH/run lands on the volume");
    return "";
  });
  EXPECT_EQ(failure, "");
}

TEST_F(PersistNs, AutoFallsBackToSymlinkWithoutCapSysAdmin) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    NS_CHECK(test::DropSysAdmin(), "drop CAP_SYS_ADMIN");
    auto r = Prepare(MakeConfig(Method::kAuto), std::nullopt, {});
    NS_CHECK(r, "prepare: " + r.error().msg);
    NS_CHECK(r->placement == Placement::kSymlink, "auto must fall back to the symlink");
    NS_CHECK(test::IsSymlink(t_ / kVh + "/run"), "VH/run is a symlink");
    NS_CHECK(MountsAt(t_ / kVh + "/run") == 0, "nothing mounted");
    test::WriteFile(t_ / kVh + "/run/agent.id", "ID-2");
    NS_CHECK(test::ReadFile(t_ / "state/run/agent.id") == "ID-2",
             "write through the symlink lands on the volume");
    return "";
  });
  EXPECT_EQ(failure, "");
}

TEST_F(PersistNs, ForcedBindWithoutPermissionIs73) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    NS_CHECK(test::DropSysAdmin(), "drop CAP_SYS_ADMIN");
    auto r = Prepare(MakeConfig(Method::kBind), std::nullopt, {});
    NS_CHECK(!r, "bind must fail without permission");
    NS_CHECK(ExitCodeFor(r.error().kind) == 73, "exit code " + std::to_string(ExitCodeFor(r.error().kind)));
    NS_CHECK(r.error().hint.find("CAP_SYS_ADMIN") != std::string::npos, "hint: " + r.error().hint);
    return "";
  });
  EXPECT_EQ(failure, "");
}

TEST_F(PersistNs, MigrationWithConflictsAcrossFilesystems) {
  test::WriteFile(t_ / kVh + "/run/default/filebeat/registry", "image-offsets");
  test::WriteFile(t_ / kVh + "/run/agent.id", "image-id");
  test::WriteFile(t_ / kVh + "/run/same", "same");
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    test::WriteFile(t_ / "state/run/agent.id", "volume-id");
    test::WriteFile(t_ / "state/run/same", "same");
    auto r = Prepare(MakeConfig(Method::kAuto), std::nullopt, {});
    NS_CHECK(r, "prepare: " + r.error().msg);
    NS_CHECK(r->placement == Placement::kBind, "bind with CAP_SYS_ADMIN");
    NS_CHECK(test::ReadFile(t_ / kVh + "/run/agent.id") == "volume-id", "the volume's copy wins");
    NS_CHECK(test::ReadFile(t_ / kVh + "/run/default/filebeat/registry") == "image-offsets",
             "image state moved");
    NS_CHECK(test::ReadFile(t_ / "state/run/same") == "same", "identical file kept");
    // The image's losing copy is kept under .agent-init/conflicts/<id>/.
    std::string digest = test::TreeDigest(t_ / "state/.agent-init/conflicts");
    NS_CHECK(digest.find("/agent.id mode=100644 size=8") != std::string::npos,
             "conflict copy kept: " + digest);
    NS_CHECK(::umount2((t_ / kVh + "/run").c_str(), MNT_DETACH) == 0, "umount");
    NS_CHECK(test::TreeDigest(t_ / kVh + "/run").empty(), "the image's run directory was emptied");
    return "";
  });
  EXPECT_EQ(failure, "");
}

TEST_F(PersistNs, SecondPrepareChangesNothing) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    {
      auto first = Prepare(MakeConfig(Method::kAuto), std::nullopt, {});
      NS_CHECK(first && first->changed, "first prepare changes");
    }  // its lock is released, as when prepare exits
    auto second = Prepare(MakeConfig(Method::kAuto), std::nullopt, {});
    NS_CHECK(second, "second prepare: " + second.error().msg);
    NS_CHECK(!second->changed, "second prepare must find the work done");
    second = std::unexpected(Error{});
    auto third = Prepare(MakeConfig(Method::kSymlink), std::nullopt, {});
    NS_CHECK(third && !third->changed, "a bound run directory is in place for any method");
    NS_CHECK(MountsAt(t_ / kVh + "/run") == 1, "exactly one mount, none stacked");
    return "";
  });
  EXPECT_EQ(failure, "");
}

TEST_F(PersistNs, SecondPrepareWithSymlinkChangesNothing) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    NS_CHECK(Prepare(MakeConfig(Method::kSymlink), std::nullopt, {}), "first prepare");
    auto second = Prepare(MakeConfig(Method::kAuto), std::nullopt, {});
    NS_CHECK(second && !second->changed, "the symlink is found in place");
    NS_CHECK(MountsAt(t_ / kVh + "/run") == 0, "no mount added on top of the symlink");
    return "";
  });
  EXPECT_EQ(failure, "");
}

// A symlink at VH/run that points elsewhere (an older configuration, an
// image that ships one) is replaced with either method.
TEST_F(PersistNs, AStaleSymlinkAtTheRunDirectoryIsReplaced) {
  ::rmdir((t_ / kVh + "/run").c_str());
  test::Symlink("/nonexistent/elsewhere/run", t_ / kVh + "/run");
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    auto r = Prepare(MakeConfig(Method::kAuto), std::nullopt, {});
    NS_CHECK(r, "prepare: " + r.error().msg);
    NS_CHECK(r->placement == Placement::kBind, "bound");
    NS_CHECK(MountsAt(t_ / kVh + "/run") == 1, "mounted");
    return "";
  });
  EXPECT_EQ(failure, "");
}

TEST_F(PersistNs, ARelativeSymlinkToTheVolumeIsInPlace) {
  ::rmdir((t_ / kVh + "/run").c_str());
  test::Symlink("../../../state/run", t_ / kVh + "/run");
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    test::MakeDirs(t_ / "state/run");
    auto r = Prepare(MakeConfig(Method::kAuto), std::nullopt, {});
    NS_CHECK(r, "prepare: " + r.error().msg);
    NS_CHECK(!r->changed && r->placement == Placement::kSymlink,
             "a relative link to STATE/run is already in place");
    return "";
  });
  EXPECT_EQ(failure, "");
}

// The home is a read-only bind (readOnlyRootFilesystem) and mounting is not
// permitted: nothing can put the run directory in place.
TEST_F(PersistNs, ReadOnlyRootWithoutMountPermissionIs73) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    std::string home = t_ / "home";
    NS_CHECK(::mount(home.c_str(), home.c_str(), nullptr, MS_BIND, nullptr) == 0, "bind home");
    NS_CHECK(::mount(nullptr, home.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) == 0,
             "remount ro");
    NS_CHECK(test::DropSysAdmin(), "drop CAP_SYS_ADMIN");
    auto r = Prepare(MakeConfig(Method::kAuto), std::nullopt, {});
    NS_CHECK(!r, "prepare must fail");
    NS_CHECK(ExitCodeFor(r.error().kind) == 73,
             "exit " + std::to_string(ExitCodeFor(r.error().kind)) + ": " + r.error().msg);
    NS_CHECK(r.error().msg.find("Read-only file system") != std::string::npos, r.error().msg);
    NS_CHECK(r.error().hint.find("read-only") != std::string::npos,
             "hint says what would work: " + r.error().hint);
    return "";
  });
  EXPECT_EQ(failure, "");
}

TEST_F(PersistNs, ReadOnlyRootWithMountPermissionBinds) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    std::string home = t_ / "home";
    NS_CHECK(::mount(home.c_str(), home.c_str(), nullptr, MS_BIND, nullptr) == 0, "bind home");
    NS_CHECK(::mount(nullptr, home.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) == 0,
             "remount ro");
    auto r = Prepare(MakeConfig(Method::kAuto), std::nullopt, {});
    NS_CHECK(r, "prepare: " + r.error().msg);
    NS_CHECK(r->placement == Placement::kBind, "bind works over an existing VH/run on a read-only root");
    test::WriteFile(t_ / kVh + "/run/x", "y");
    NS_CHECK(test::ReadFile(t_ / "state/run/x") == "y", "writable through the bind");
    return "";
  });
  EXPECT_EQ(failure, "");
}

// During a rollout the new pod's init container (a new image) runs while
// the old pod's agent still holds the volume and executes from the
// --seed-data copy. The lock comes first: the refused start (75) leaves the
// copy as the running agent has it; once the volume is free, the next start
// makes the new copy.
TEST_F(PersistNs, SeedDataIsNotTouchedWhileTheVolumeIsHeld) {
  test::MakeImages(t_.path(), {"elastic-agent-aaaaaa", "elastic-agent-bbbbbb"}, {"run"});
  test::MakeDirs(t_ / "seed");
  auto init = [&](const char* vh) {
    return test::AgentInit({"--home", t_ / std::string("image-") + vh, "--state", t_ / "state", "--method",
                            "symlink", "--lock-timeout", "0", "prepare", "--seed-data", t_ / "seed"});
  };
  test::RunResult a = init("elastic-agent-aaaaaa");
  ASSERT_EQ(a.status, 0) << a.err;
  const std::string running = test::TreeDigest(t_ / "seed");
  ASSERT_NE(running.find("elastic-agent-aaaaaa"), std::string::npos) << running;
  // The old pod's agent: it inherited the lock.
  int held = ::open((t_ / "state/.agent-init/lock").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  test::RunResult refused = init("elastic-agent-bbbbbb");
  EXPECT_EQ(refused.status, 75) << refused.err;
  EXPECT_EQ(test::TreeDigest(t_ / "seed"), running) << "the running agent's data directory was changed";
  ::close(held);
  test::RunResult b = init("elastic-agent-bbbbbb");
  EXPECT_EQ(b.status, 0) << b.err;
  EXPECT_NE(test::TreeDigest(t_ / "seed").find("elastic-agent-bbbbbb"), std::string::npos);
}

TEST_F(PersistNs, SymlinkPlantedInTheVolumeIsRefusedAndItsTargetUntouched) {
  test::WriteFile(t_ / "outside/keep", "precious");
  std::string before = test::TreeDigest(t_ / "outside");
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    test::Symlink(t_ / "outside", t_ / "state/run");
    auto r = Prepare(MakeConfig(Method::kAuto), std::nullopt, {});
    NS_CHECK(!r, "prepare must refuse");
    NS_CHECK(ExitCodeFor(r.error().kind) == 77, "exit " + std::to_string(ExitCodeFor(r.error().kind)));
    NS_CHECK(r.error().msg.find("symlink") != std::string::npos, r.error().msg);
    NS_CHECK(MountsAt(t_ / kVh + "/run") == 0, "nothing mounted");
    NS_CHECK(!test::IsSymlink(t_ / kVh + "/run"), "VH/run not replaced");
    return "";
  });
  EXPECT_EQ(failure, "");
  EXPECT_EQ(test::TreeDigest(t_ / "outside"), before);
}

TEST_F(PersistNs, SymlinkedBookkeepingDirectoryIsRefused) {
  test::MakeDirs(t_ / "outside");
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    test::Symlink(t_ / "outside", t_ / "state/.agent-init");
    auto r = Prepare(MakeConfig(Method::kAuto), std::nullopt, {});
    NS_CHECK(!r && ExitCodeFor(r.error().kind) == 77, "refused with 77");
    return "";
  });
  EXPECT_EQ(failure, "");
  EXPECT_EQ(test::TreeDigest(t_ / "outside"), "");
}

// The agent (7.10 - 7.14) unpacks into data/tmp and renames into VH/install,
// then executes from there. With the volume only at STATE, both stay on the
// image's exec-capable filesystem, on one mount.
TEST_F(PersistNs, ComponentInstalledThroughTmpExecutesWithANoexecVolume) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    auto r = Prepare(MakeConfig(Method::kAuto), std::nullopt, {});
    NS_CHECK(r, "prepare: " + r.error().msg);
    std::string tmp = t_ / "home/data/tmp/elastic-agent-install-1";
    test::WriteFile(tmp, test::ReadFile("/bin/true"), 0755);
    std::string installed = t_ / kVh + "/install/metricbeat";
    NS_CHECK(::rename(tmp.c_str(), installed.c_str()) == 0, std::string("rename: ") + std::strerror(errno));
    NS_CHECK(test::Shell(installed) == 0, "the installed component runs");
    return "";
  });
  EXPECT_EQ(failure, "");
}

// The broken set-up agent-init exists to avoid, proven to fail: a noexec
// volume over all of data/. prepare refuses it, and an install there cannot run.
TEST_F(PersistNs, NoexecVolumeOverDataFailsAndIsRefused) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    std::string vh = t_ / kVh;
    NS_CHECK(::mount("tmpfs", vh.c_str(), "tmpfs", MS_NOEXEC, nullptr) == 0, "noexec tmpfs over VH");
    test::MakeDirs(vh + "/install");
    test::WriteFile(vh + "/install/metricbeat", test::ReadFile("/bin/true"), 0755);
    NS_CHECK(test::Shell(vh + "/install/metricbeat 2>/dev/null") == 126,
             "executing from noexec fails (EACCES)");
    auto r = Prepare(MakeConfig(Method::kAuto), std::nullopt, {});
    NS_CHECK(!r, "prepare must refuse a noexec versioned home");
    NS_CHECK(ExitCodeFor(r.error().kind) == 65, "exit " + std::to_string(ExitCodeFor(r.error().kind)));
    NS_CHECK(r.error().msg.find("noexec") != std::string::npos, r.error().msg);
    return "";
  });
  EXPECT_EQ(failure, "");
}

// overlayfs refuses to rename directories from a lower (image) layer with
// EXDEV: the migration copies, then removes.
TEST_F(PersistNs, MigrationFromAnOverlayImageLayer) {
  test::Make711Home(t_ / "lower/home");
  test::WriteFile(t_ / "lower/home/data/elastic-agent-9b2fec/run/default/state.db", "layer-state");
  test::MakeDirs(t_ / "upper");
  test::MakeDirs(t_ / "work");
  test::MakeDirs(t_ / "root");
  std::string failure = InMountNamespace([&]() -> std::string {
    std::string opts = "lowerdir=" + t_ / "lower" + ",upperdir=" + t_ / "upper" + ",workdir=" + t_ / "work";
    // In a user namespace (tests/qemu/sandbox) the upper layer cannot carry
    // trusted.* attributes: overlayfs keeps its own in user.* instead, as
    // rootless Podman's does.
    std::string upper = t_ / "upper";
    if (::setxattr(upper.c_str(), "trusted.agent-init-probe", "1", 1, 0) == 0) {
      ::removexattr(upper.c_str(), "trusted.agent-init-probe");
    } else if (errno == EPERM) {
      opts += ",userxattr";
    }
    NS_CHECK(::mount("overlay", (t_ / "root").c_str(), "overlay", 0, opts.c_str()) == 0,
             std::string("mount overlay: ") + std::strerror(errno));
    test::MakeDirs(t_ / "root/state");
    NS_CHECK(::mount("tmpfs", (t_ / "root/state").c_str(), "tmpfs", MS_NOEXEC, nullptr) == 0, "tmpfs");
    Config c;
    c.home = t_ / "root/home";
    c.state = t_ / "root/state";
    c.method = Method::kSymlink;
    auto r = Prepare(c, std::nullopt, {});
    NS_CHECK(r, "prepare: " + r.error().msg);
    NS_CHECK(test::ReadFile(t_ / "root/state/run/default/state.db") == "layer-state",
             "copied from the layer");
    NS_CHECK(test::IsSymlink(t_ / "root/home/data/elastic-agent-9b2fec/run"), "VH/run replaced by a symlink");
    return "";
  });
  EXPECT_EQ(failure, "");
}

}  // namespace
}  // namespace agent_init
