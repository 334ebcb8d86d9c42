// The volume's safety contract where it needs root and real mounts: --user
// against a root-owned volume, devices planted in the volume, and a full
// volume in the middle of a migration.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include <gtest/gtest.h>

#include "binary.h"
#include "home_fixture.h"
#include "namespace.h"
#include "process/spawn.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

using test::AgentInit;
using test::Contains;
using test::InMountNamespace;
using test::RunResult;

using test::kVh;

constexpr const char* kPasswd =
    "root:x:0:0:root:/root:/bin/sh\n"
    "elastic-agent:x:1000:1000::/usr/share/elastic-agent:/bin/false\n"
    "other:x:2000:2000::/home/other:/bin/sh\n";
constexpr const char* kGroup =
    "root:x:0:\n"
    "elastic-agent:x:1000:\n"
    "docker:x:999:elastic-agent\n"
    "staff:x:50:\n";

class SafetyNs : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_MOUNT_NAMESPACE();
    ::chmod(t_.path().c_str(), 0755);  // the agent's user must reach the volume
    test::Make711Home(t_ / "home");
    test::MakeDirs(t_ / "state", 0755);
    test::WriteFile(t_ / "etc/passwd", kPasswd);
    test::WriteFile(t_ / "etc/group", kGroup);
  }
  // In the child: the image's user database, without touching the host's.
  std::string UseFixtureEtc() {
    for (const char* f : {"passwd", "group"}) {
      std::string src = t_ / "etc/" + f, dst = std::string("/etc/") + f;
      if (::mount(src.c_str(), dst.c_str(), nullptr, MS_BIND, nullptr) < 0) {
        return "bind " + src + ": " + std::strerror(errno);
      }
    }
    return "";
  }
  std::vector<std::string> Args(std::vector<std::string> more) {
    std::vector<std::string> a{"--home", t_ / "home", "--state", t_ / "state"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  // The agent reports who it runs as and writes into its run directory.
  std::vector<std::string> Probe() {
    return {"--", "/bin/sh", "-c",
            "echo uid=$(id -u) gid=$(id -g) groups=$(id -G) home=$HOME; "
            "grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status | tr -s '\\t' ' '; "
            "echo ok > " +
                t_ / kVh + "/run/written && echo wrote-run"};
  }
  test::TempDir t_;
};

struct UserCase {
  const char* spec;
  const char* expect;  // substring of the probe's first line
};

// ../shared/notes/pid1.md, "Dropping privileges": the whole table, in exec
// mode and under --supervise (where the child switches users on its own,
// sharing agent-init's memory until it execs: src/process/spawn.h).
TEST_F(SafetyNs, UserTable) {
  const UserCase cases[] = {
      // USER:GROUP with a known uid: that group only, HOME from the entry
      {"1000:1000", "uid=1000 gid=1000 groups=1000 home=/usr/share/elastic-agent"},
      // USER: primary group and memberships from the files
      {"elastic-agent", "uid=1000 gid=1000 groups=1000 999 home=/usr/share/elastic-agent"},
      {"elastic-agent:staff", "uid=1000 gid=50 groups=50 home=/usr/share/elastic-agent"},
      // a numeric uid with an entry uses it
      {"2000", "uid=2000 gid=2000 groups=2000 home=/home/other"},
      // numeric ids without entries: gid = uid, HOME / (as gosu)
      {"4242", "uid=4242 gid=4242 groups=4242 home=/"},
      {"4242:0", "uid=4242 gid=0 groups=0 home=/"},
  };
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = UseFixtureEtc(); !e.empty()) return e;
    for (const char* mode : {"--method=auto", "--supervise"}) {
      for (const auto& c : cases) {
        const std::string what = std::string(mode) + " --user " + c.spec;
        auto args = Args({mode, "--user", c.spec});
        for (auto& p : Probe()) args.push_back(p);
        RunResult r = AgentInit(args, {"HOME=/root"});  // as Docker, Podman and containerd set it
        std::string line = r.out.substr(0, r.out.find('\n'));
        NS_CHECK(r.status == 0, what + ": exit " + std::to_string(r.status) + " " + r.err);
        NS_CHECK(line == c.expect, what + ": got " + line + ", want " + c.expect);
        for (const char* cap : {"CapInh: 0000000000000000", "CapPrm: 0000000000000000",
                                "CapEff: 0000000000000000", "CapAmb: 0000000000000000"}) {
          NS_CHECK(Contains(r.out, cap), what + ": capability left: " + r.out);
        }
        NS_CHECK(Contains(r.out, "wrote-run"), what + ": cannot write its run directory: " + r.err);
      }
    }
    return "";
  });
  EXPECT_EQ(failure, "");
}

// Docker, Podman and containerd start the container with HOME=/root: the
// agent switched to 1000 must not get root's home. --user sets HOME to the
// user's home, or / without an entry, whatever it was, as gosu does.
TEST_F(SafetyNs, UserGetsItsOwnHomeNotTheCallers) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = UseFixtureEtc(); !e.empty()) return e;
    for (const char* mode : {"--method=auto", "--supervise"}) {
      auto args = Args({mode, "--user", "elastic-agent", "--", "/bin/sh", "-c", "echo home=$HOME; env | grep -c ^HOME="});
      RunResult r = AgentInit(args, {"HOME=/root"});
      NS_CHECK(r.status == 0 && Contains(r.out, "home=/usr/share/elastic-agent\n1\n"),
               std::string(mode) + ": " + r.out + r.err);
    }
    return "";
  });
  EXPECT_EQ(failure, "");
}

// The command is looked up as the user, after the switch: a program only
// root may execute is 126 for the agent's user, named in the message, and a
// PATH entry the user cannot execute is skipped for one it can.
TEST_F(SafetyNs, CommandIsFoundAsTheUser) {
  test::WriteFile(t_ / "bin/root-only", "#!/bin/sh\necho RAN\n", 0700);
  test::WriteFile(t_ / "a/tool", "#!/bin/sh\necho root-tool\n", 0700);
  test::WriteFile(t_ / "b/tool", "#!/bin/sh\necho user-tool\n", 0755);
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = UseFixtureEtc(); !e.empty()) return e;
    for (const char* mode : {"--method=auto", "--supervise"}) {
      RunResult r = AgentInit(Args({mode, "--user", "1000:1000", "--", t_ / "bin/root-only"}));
      NS_CHECK(r.status == 126, std::string(mode) + ": exit " + std::to_string(r.status) + " " + r.err);
      NS_CHECK(!Contains(r.out, "RAN") && Contains(r.err, t_ / "bin/root-only"),
               std::string(mode) + ": " + r.err);
      r = AgentInit(Args({mode, "--user", "1000:1000", "--", "tool"}), {"PATH=" + t_ / "a" + ":" + t_ / "b"});
      NS_CHECK(r.status == 0 && Contains(r.out, "user-tool"), std::string(mode) + ": " + r.out + r.err);
      r = AgentInit(Args({mode, "--", "tool"}), {"PATH=" + t_ / "a" + ":" + t_ / "b"});
      NS_CHECK(r.status == 0 && Contains(r.out, "root-tool"),
               std::string(mode) + " as root: " + r.out + r.err);
    }
    return "";
  });
  EXPECT_EQ(failure, "");
}

// The child switches users in memory it shares with the supervisor until
// its exec, and the kernel marks that memory non-dumpable at the switch: the
// supervisor (PID 1, for a whole container's life) must stay as it was, able
// to dump core and be inspected like after a fork.
TEST_F(SafetyNs, SpawningAsAnotherUserLeavesTheSupervisorDumpable) {
  if (::geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root to switch users";
  ASSERT_EQ(::prctl(PR_GET_DUMPABLE), 1);
  SpawnRequest request;
  request.argv = {"/bin/true"};
  request.user = Credentials{.uid = 1000, .gid = 1000, .groups = {1000}, .name = {}, .home = {}};
  auto spawned = Spawn(request);
  ASSERT_TRUE(spawned) << spawned.error().msg;
  int status = 0;
  ASSERT_EQ(::waitpid(spawned->pid, &status, 0), spawned->pid);
  EXPECT_FALSE(spawned->failure) << spawned->failure->msg;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(::prctl(PR_GET_DUMPABLE), 1);
}

TEST_F(SafetyNs, UnknownUserOrGroupIs67AndNothingRuns) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = UseFixtureEtc(); !e.empty()) return e;
    for (const char* spec : {"nosuchuser", "elastic-agent:nosuchgroup", "nosuchuser:1000"}) {
      RunResult r = AgentInit(Args({"--user", spec, "--", "/bin/sh", "-c", "echo RAN"}));
      NS_CHECK(r.status == 67, std::string(spec) + ": exit " + std::to_string(r.status));
      NS_CHECK(!Contains(r.out, "RAN"), std::string(spec) + ": the command ran");
      NS_CHECK(Contains(r.err, "no user named") || Contains(r.err, "no group named"), r.err);
    }
    NS_CHECK(!test::Exists(t_ / "state/run"), "an unknown user fails before the volume is touched");
    return "";
  });
  EXPECT_EQ(failure, "");
}

// Issue #4, done when: --user 1000:1000 on a root-owned volume gives an agent
// running as 1000 that can write its run directory, with nothing outside the
// volume touched; `prepare --user` alone does the init container's chown.
TEST_F(SafetyNs, PrepareUserHandsARootOwnedVolumeToTheUser) {
  test::WriteFile(t_ / "outside/secret", "root's", 0600);
  std::string failure = InMountNamespace([&]() -> std::string {
    NS_CHECK(::mount("tmpfs", (t_ / "state").c_str(), "tmpfs", MS_NOEXEC, "mode=0755,uid=0,gid=0") == 0,
             "tmpfs");
    test::WriteFile(t_ / "state/run/old-root-file", "x", 0600);
    test::Symlink(t_ / "outside/secret", t_ / "state/run/escape");
    test::MakeDirs(t_ / "state/run/sub");
    NS_CHECK(::mount("tmpfs", (t_ / "state/run/sub").c_str(), "tmpfs", 0, "mode=0700") == 0, "inner mount");
    RunResult r = AgentInit(Args({"--user", "1000:1000", "prepare"}));
    NS_CHECK(r.status == 0, "prepare: " + r.err);
    struct stat st;
    for (const char* p :
         {"state/run", "state/run/old-root-file", "state/.agent-init", "state/.agent-init/lock"}) {
      NS_CHECK(::lstat((t_ / p).c_str(), &st) == 0 && st.st_uid == 1000 && st.st_gid == 1000,
               std::string(p) + " not handed over");
    }
    NS_CHECK(::lstat((t_ / "state/run/escape").c_str(), &st) == 0 && st.st_uid == 1000, "the symlink itself");
    NS_CHECK(::stat((t_ / "outside/secret").c_str(), &st) == 0 && st.st_uid == 0,
             "outside the volume touched");
    NS_CHECK(::stat((t_ / "state/run/sub").c_str(), &st) == 0 && st.st_uid == 0,
             "crossed into another mount");
    // An operator removes the run directory to re-enroll: the next start's
    // new one is the user's too, although the walk is not repeated.
    NS_CHECK(::umount2((t_ / "state/run/sub").c_str(), MNT_DETACH) == 0, "umount");
    NS_CHECK(::umount2((t_ / kVh + "/run").c_str(), MNT_DETACH) == 0, "a new container");
    NS_CHECK(test::Shell("rm -rf " + t_ / "state/run") == 0, "rm");
    RunResult again = AgentInit(Args({"--user", "1000:1000", "prepare"}));
    NS_CHECK(again.status == 0 && ::stat((t_ / "state/run").c_str(), &st) == 0 && st.st_uid == 1000,
             "a recreated run directory is handed over: " + again.err);
    // The agent as 1000, in the next container.
    RunResult agent = AgentInit(Args({"--user", "1000:1000", "--", "/bin/sh", "-c",
                                      "id -u; echo id > " + t_ / kVh + "/run/agent.id && echo wrote"}));
    NS_CHECK(agent.status == 0 && Contains(agent.out, "1000\nwrote"), agent.out + agent.err);
    return "";
  });
  EXPECT_EQ(failure, "");
}

TEST_F(SafetyNs, DeviceWhereTheRunDirectoryBelongsIsRefused) {
  std::string failure = InMountNamespace([&]() -> std::string {
    NS_CHECK(::mount("tmpfs", (t_ / "state").c_str(), "tmpfs", 0, "mode=0755") == 0, "tmpfs");
    // A character device (bound, not made: a user namespace may not mknod).
    test::WriteFile(t_ / "state/run", "");
    NS_CHECK(::mount("/dev/null", (t_ / "state/run").c_str(), nullptr, MS_BIND, nullptr) == 0,
             "bind /dev/null");
    RunResult r = AgentInit(Args({"prepare"}));
    NS_CHECK(r.status == 65, "exit " + std::to_string(r.status) + ": " + r.err);
    NS_CHECK(Contains(r.err, "expected a directory"), r.err);
    return "";
  });
  EXPECT_EQ(failure, "");
}

// A full volume in the middle of a migration: a clear error, the journal
// keeps the intent, nothing is lost, and the next start (with room) finishes.
TEST_F(SafetyNs, FullVolumeDuringMigrationLosesNothing) {
  test::WriteFile(t_ / kVh + "/run/small", "small");
  test::WriteFile(t_ / kVh + "/run/big", std::string(3 << 20, 'b'));
  test::WriteFile(t_ / kVh + "/run/z/more", "more");
  std::string expected = test::TreeDigest(t_ / kVh + "/run");
  std::string failure = InMountNamespace([&]() -> std::string {
    NS_CHECK(::mount("tmpfs", (t_ / "state").c_str(), "tmpfs", MS_NOEXEC, "size=1m") == 0, "small tmpfs");
    RunResult full = AgentInit(Args({"--method", "symlink", "prepare"}));
    NS_CHECK(full.status == 73, "exit " + std::to_string(full.status) + ": " + full.err);
    NS_CHECK(Contains(full.err, "No space left on device"), full.err);
    NS_CHECK(test::Exists(t_ / "state/.agent-init/journal"), "the intent stays recorded");
    NS_CHECK(!test::IsSymlink(t_ / kVh + "/run"), "VH/run not replaced while its state is not safe");
    NS_CHECK(::mount(nullptr, (t_ / "state").c_str(), nullptr, MS_REMOUNT | MS_NOEXEC, "size=16m") == 0,
             "grow");
    RunResult again = AgentInit(Args({"--method", "symlink", "prepare"}));
    NS_CHECK(again.status == 0, "after growing: " + again.err);
    NS_CHECK(Contains(again.err, "finishing a migration that was interrupted"), again.err);
    NS_CHECK(test::TreeDigest(t_ / "state/run") == expected, "content differs after recovery");
    NS_CHECK(!test::Exists(t_ / "state/.agent-init/journal"), "journal cleared");
    return "";
  });
  EXPECT_EQ(failure, "");
}

// A version change on a nearly full volume: the snapshot cannot fit. The
// start fails with 73 and says what the state takes and what is free, and
// leaves no partial copy behind: the volume is as full as before, so the
// next start meets the same, explained, refusal rather than a volume made
// full by the last attempt; --keep-snapshots 0 is a way on.
TEST_F(SafetyNs, FullVolumeOnAVersionChangeLeavesNoPartialSnapshot) {
  test::MakeImages(t_.path(), {"elastic-agent-aaaaaa", "elastic-agent-bbbbbb"});
  auto start = [&](const char* vh, std::vector<std::string> more = {}) {
    std::vector<std::string> a{"--home", t_ / std::string("image-") + vh, "--state", t_ / "state", "--method",
                               "symlink"};
    a.insert(a.end(), more.begin(), more.end());
    a.push_back("prepare");
    return AgentInit(a);
  };
  std::string failure = InMountNamespace([&]() -> std::string {
    NS_CHECK(::mount("tmpfs", (t_ / "state").c_str(), "tmpfs", MS_NOEXEC, "size=2m") == 0, "small tmpfs");
    NS_CHECK(start("elastic-agent-aaaaaa").status == 0, "first start of A");
    test::WriteFile(t_ / "state/run/agent.id", "A");
    test::WriteFile(t_ / "state/run/queue", std::string(1200 << 10, 'q'));
    const std::string state = test::TreeDigest(t_ / "state/run");
    auto free_space = [&] {
      struct statvfs vfs {};
      ::statvfs((t_ / "state").c_str(), &vfs);
      return static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize;
    };
    const auto before = free_space();
    for (int attempt = 1; attempt <= 2; ++attempt) {
      RunResult full = start("elastic-agent-bbbbbb");
      std::string n = "attempt " + std::to_string(attempt) + ": ";
      NS_CHECK(full.status == 73, n + "exit " + std::to_string(full.status) + ": " + full.err);
      NS_CHECK(Contains(full.err, "No space left on device"), n + full.err);
      NS_CHECK(Contains(full.err, "the state takes 1.2 MiB") && Contains(full.err, " free"),
               n + "says what it needs and has: " + full.err);
      NS_CHECK(Contains(full.err, "--keep-snapshots 0") && Contains(full.err, "free space on the volume"),
               n + "names both ways on: " + full.err);
      NS_CHECK(!Contains(full.err, "interrupted"), n + "no leftover from the last attempt: " + full.err);
      NS_CHECK(!test::Exists(t_ / "state/.agent-init/snapshots/.partial"), n + "the partial copy is removed");
      NS_CHECK(!test::Exists(t_ / "state/.agent-init/journal"), n + "the journal is cleared");
      NS_CHECK(free_space() == before,
               n + "the volume is as full as before: " + std::to_string(free_space()) + " free, was " +
                   std::to_string(before));
      NS_CHECK(test::TreeDigest(t_ / "state/run") == state, n + "the live state is untouched");
    }
    RunResult skip = start("elastic-agent-bbbbbb", {"--keep-snapshots", "0"});
    NS_CHECK(skip.status == 0, "--keep-snapshots 0: " + skip.err);
    NS_CHECK(test::TreeDigest(t_ / "state/run") == state, "B starts on A's state");
    return "";
  });
  EXPECT_EQ(failure, "");
}

}  // namespace
}  // namespace agent_init
