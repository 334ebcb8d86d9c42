// The volume's safety contract, through the real binary: one owner at a
// time, snapshots on version changes, restore. No root needed: the symlink
// method on fixture homes in a temporary directory.
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "binary.h"
#include "home_fixture.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

using test::AgentInit;
using test::Contains;
using test::RunResult;

constexpr const char* kA = "elastic-agent-aaaaaa";
constexpr const char* kB = "elastic-agent-bbbbbb";

class VolumeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* vh : {kA, kB}) {
      test::HomeFixture f(t_ / std::string("image-") + vh);
      f.VersionedHome(vh, {"run"});
      f.HomeSymlink(f.Vh(vh) + "/elastic-agent");
    }
    test::MakeDirs(t_ / "state");
  }
  std::vector<std::string> Args(const char* vh, std::vector<std::string> more) {
    std::vector<std::string> args{
        "--home", t_ / std::string("image-") + vh, "--state", t_ / "state", "--method", "symlink"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  // What the agent of image `vh` writes into its run directory.
  void AgentWrites(const char* vh, const std::string& id) {
    test::WriteFile(t_ / std::string("image-") + vh + "/data/" + vh + "/run/agent.id", id);
  }
  std::string Snapshot(const std::string& name) { return t_ / "state/.agent-init/snapshots/" + name; }
  test::TempDir t_;
};

// Issue #4, done when: two instances on one volume, exactly one runs its
// command; the other waits, then exits 75 (or proceeds once the first ends).
TEST_F(VolumeCli, TwoInstancesOnOneVolume) {
  std::string log = t_ / "commands.log";
  pid_t first = test::Spawn(
      [&] {
        auto a = Args(kA, {"--", "/bin/sh", "-c", "echo first-ran >> " + log + "; sleep 3"});
        a.insert(a.begin(), test::AgentInitBinary());
        return a;
      }(),
      t_ / "first.err");
  for (int i = 0; i < 100 && !Contains(test::ReadFile(log), "first-ran"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(Contains(test::ReadFile(log), "first-ran")) << test::ReadFile(t_ / "first.err");

  RunResult second =
      AgentInit(Args(kA, {"--lock-timeout", "1", "--", "/bin/sh", "-c", "echo second-ran >> " + log}));
  EXPECT_EQ(second.status, 75) << second.err;
  EXPECT_TRUE(Contains(second.err, "another agent-init instance is still running on this volume"))
      << second.err;
  EXPECT_TRUE(Contains(second.err, "waiting 1s")) << second.err;
  EXPECT_TRUE(Contains(second.err, "waiting for the volume")) << "it logs who holds the lock while it waits";
  EXPECT_FALSE(Contains(test::ReadFile(log), "second-ran"));

  RunResult third =
      AgentInit(Args(kA, {"--lock-timeout", "30", "--", "/bin/sh", "-c", "echo third-ran >> " + log}));
  EXPECT_EQ(third.status, 0) << third.err;
  EXPECT_EQ(test::ReadFile(log), "first-ran\nthird-ran\n") << "the third waited for the first to end";
  EXPECT_EQ(test::Wait(first), 0);
}

TEST_F(VolumeCli, EnvironmentSetsTheLockTimeout) {
  std::string log = t_ / "commands.log";
  auto a = Args(kA, {"--", "/bin/sh", "-c", "echo held >> " + log + "; sleep 2"});
  a.insert(a.begin(), test::AgentInitBinary());
  pid_t first = test::Spawn(a, t_ / "first.err");
  for (int i = 0; i < 100 && !Contains(test::ReadFile(log), "held"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  RunResult second = AgentInit(Args(kA, {"prepare"}), {"AGENT_INIT_LOCK_TIMEOUT=0"});
  EXPECT_EQ(second.status, 75);
  RunResult inspect = AgentInit(Args(kA, {"inspect", "--json"}));
  EXPECT_TRUE(Contains(inspect.out, "\"lock\":{\"held\":true")) << inspect.out;
  EXPECT_TRUE(Contains(inspect.out, "\"mode\":\"exec\"")) << inspect.out;
  test::Wait(first);
}

// Issue #4, done when: A -> B -> A image changes keep A's state as a snapshot.
TEST_F(VolumeCli, VersionChangesKeepSnapshots) {
  ASSERT_EQ(AgentInit(Args(kA, {"prepare"})).status, 0);
  AgentWrites(kA, "state-of-A");

  RunResult toB = AgentInit(Args(kB, {"prepare"}));
  ASSERT_EQ(toB.status, 0) << toB.err;
  EXPECT_EQ(test::ReadFile(Snapshot(kA) + "/agent.id"), "state-of-A");
  EXPECT_EQ(test::ReadFile(t_ / "state/run/agent.id"), "state-of-A") << "the live data is never moved away";
  AgentWrites(kB, "state-of-B");

  RunResult backToA = AgentInit(Args(kA, {"prepare"}));
  ASSERT_EQ(backToA.status, 0) << backToA.err;
  EXPECT_TRUE(Contains(backToA.err, "going back to an older versioned home")) << backToA.err;
  EXPECT_TRUE(Contains(backToA.err, kA) && Contains(backToA.err, kB)) << "names both versions";
  EXPECT_TRUE(Contains(backToA.err, Snapshot(kA))) << "says where A's state is";
  EXPECT_EQ(test::ReadFile(Snapshot(kB) + "/agent.id"), "state-of-B");
  EXPECT_EQ(test::ReadFile(Snapshot(kA) + "/agent.id"), "state-of-A");

  std::string history = test::ReadFile(t_ / "state/.agent-init/history");
  EXPECT_TRUE(Contains(history, "current elastic-agent-aaaaaa\n")) << history;
  EXPECT_TRUE(Contains(history, "from elastic-agent-bbbbbb\nto elastic-agent-aaaaaa\n")) << history;
  RunResult inspect = AgentInit(Args(kA, {"inspect", "--json"}));
  EXPECT_TRUE(Contains(inspect.out, "\"snapshots\":[")) << inspect.out;
  EXPECT_TRUE(Contains(inspect.out, "\"last_versioned_home\":\"elastic-agent-aaaaaa\"")) << inspect.out;
}

TEST_F(VolumeCli, KeepSnapshotsBoundsTheirNumber) {
  ASSERT_EQ(AgentInit(Args(kA, {"prepare"})).status, 0);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(AgentInit(Args(kB, {"--keep-snapshots", "1", "prepare"})).status, 0);
    ASSERT_EQ(AgentInit(Args(kA, {"--keep-snapshots", "1", "prepare"})).status, 0);
  }
  auto snapshots = test::TreeDigest(t_ / "state/.agent-init/snapshots");
  EXPECT_TRUE(Contains(snapshots, kB)) << snapshots;
  EXPECT_FALSE(Contains(snapshots, kA)) << "only the newest one is kept: " << snapshots;
  ASSERT_EQ(AgentInit(Args(kB, {"--keep-snapshots", "0", "prepare"})).status, 0);
  EXPECT_FALSE(test::Exists(Snapshot(kA))) << "0 takes none";
}

TEST_F(VolumeCli, RestorePutsASnapshotBackAndRefusesWhileTheVolumeIsHeld) {
  ASSERT_EQ(AgentInit(Args(kA, {"prepare"})).status, 0);
  AgentWrites(kA, "state-of-A");
  ASSERT_EQ(AgentInit(Args(kB, {"prepare"})).status, 0);
  AgentWrites(kB, "state-of-B");

  std::string log = t_ / "commands.log";
  auto a = Args(kB, {"--", "/bin/sh", "-c", "echo running >> " + log + "; sleep 2"});
  a.insert(a.begin(), test::AgentInitBinary());
  pid_t agent = test::Spawn(a, t_ / "agent.err");
  for (int i = 0; i < 100 && !Contains(test::ReadFile(log), "running"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  RunResult refused = AgentInit({"--state", t_ / "state", "restore", kA});
  EXPECT_EQ(refused.status, 75) << refused.err;
  EXPECT_TRUE(Contains(refused.err, "stop the agent")) << refused.err;
  EXPECT_EQ(test::ReadFile(t_ / "state/run/agent.id"), "state-of-B");
  test::Wait(agent);

  RunResult restored = AgentInit({"--state", t_ / "state", "restore", kA});
  ASSERT_EQ(restored.status, 0) << restored.err;
  EXPECT_EQ(test::ReadFile(t_ / "state/run/agent.id"), "state-of-A");
  EXPECT_TRUE(Contains(test::TreeDigest(t_ / "state/.agent-init/snapshots"), "before-restore-"));
  // The state belongs to A again: A's next start takes no snapshot.
  RunResult startA = AgentInit(Args(kA, {"prepare"}));
  EXPECT_FALSE(Contains(startA.err, "different versioned home")) << startA.err;

  RunResult missing = AgentInit({"--state", t_ / "state", "restore", "elastic-agent-cccccc"});
  EXPECT_EQ(missing.status, 64);
  EXPECT_TRUE(Contains(missing.err, kA)) << "lists what is there: " << missing.err;
}

TEST_F(VolumeCli, HostileBookkeepingFilesAreRefusedOrReplacedNeverFollowed) {
  test::WriteFile(t_ / "outside/file", "keep");
  test::MakeDirs(t_ / "state/.agent-init");
  test::Symlink(t_ / "outside/file", t_ / "state/.agent-init/history");
  RunResult r = AgentInit(Args(kA, {"prepare"}));
  EXPECT_EQ(r.status, 77) << r.err;
  ::unlink((t_ / "state/.agent-init/history").c_str());

  ::unlink((t_ / "state/.agent-init/owner").c_str());  // written by the refused start
  test::Symlink(t_ / "outside/file", t_ / "state/.agent-init/owner");
  r = AgentInit(Args(kA, {"prepare"}));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(test::IsSymlink(t_ / "state/.agent-init/owner")) << "the planted symlink is replaced";
  EXPECT_EQ(test::ReadFile(t_ / "outside/file"), "keep");

  test::Symlink(t_ / "outside", t_ / "state/.agent-init/snapshots");
  r = AgentInit(Args(kB, {"prepare"}));
  EXPECT_EQ(r.status, 77) << r.err;
  EXPECT_FALSE(test::Exists(t_ / "outside/elastic-agent-aaaaaa"));
  EXPECT_FALSE(test::Exists(t_ / "outside/.partial"));
  EXPECT_EQ(test::ReadFile(t_ / "outside/file"), "keep");
}

TEST_F(VolumeCli, FifoWhereTheRunDirectoryBelongsIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((t_ / "state/run").c_str(), 0600), 0);
  RunResult r = AgentInit(Args(kA, {"prepare"}));
  EXPECT_EQ(r.status, 65) << r.err;
  EXPECT_TRUE(Contains(r.err, t_ / "state/run")) << r.err;
}

TEST_F(VolumeCli, DeepTreesFailSnapshotsClearlyAndLoseNothing) {
  ASSERT_EQ(AgentInit(Args(kA, {"prepare"})).status, 0);
  std::string deep = t_ / "state/run";
  for (int i = 0; i < 300; ++i) deep += "/d";
  test::WriteFile(deep + "/leaf", "deep");
  RunResult r = AgentInit(Args(kB, {"prepare"}));
  EXPECT_EQ(r.status, 73) << r.err;
  EXPECT_TRUE(Contains(r.err, "deeper than")) << r.err;
  EXPECT_TRUE(Contains(r.err, "--keep-snapshots 0")) << r.err;
  EXPECT_EQ(test::ReadFile(deep + "/leaf"), "deep");
  RunResult skip = AgentInit(Args(kB, {"--keep-snapshots", "0", "prepare"}));
  EXPECT_EQ(skip.status, 0) << skip.err;
  EXPECT_EQ(test::ReadFile(deep + "/leaf"), "deep");
}

}  // namespace
}  // namespace agent_init
