// restore as a library call, without root.
#include "commands/restore.h"

#include <gtest/gtest.h>

#include "base/exit_codes.h"
#include "fake_privileged.h"
#include "temp_dir.h"
#include "volume/lock.h"
#include "volume/snapshot.h"
#include "volume/volume.h"

namespace agent_init {
namespace {

class RestoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.state = t_ / "state";
    config_.mode = Mode::kRestore;
  }
  // A volume whose run directory (in `layout`) was snapshotted as "old"
  // holding `then`, and now holds `now`.
  void MakeVolume(Layout layout, const std::string& then, const std::string& now) {
    std::string run = t_ / "state/" + std::string(Volume::RunRel(layout));
    test::WriteFile(run + "/agent.id", then);
    auto v = Volume::Open(config_.state);
    ASSERT_TRUE(v);
    ASSERT_TRUE(v->MakeBookkeeping());
    ASSERT_TRUE(TakeSnapshot(*v, layout, "old", 2));
    test::WriteFile(run + "/agent.id", now);
  }
  Result<void> Run(const std::string& name, const std::optional<Credentials>& user = std::nullopt) {
    return Restore(config_, user, name, ops_);
  }
  test::TempDir t_;
  Config config_;
  test::FakePrivileged ops_;
};

TEST_F(RestoreTest, PutsTheSnapshotBackAndKeepsTheCurrentState) {
  ASSERT_NO_FATAL_FAILURE(MakeVolume(Layout::kRun, "then", "now"));
  ASSERT_TRUE(Run("old"));
  EXPECT_EQ(test::ReadFile(t_ / "state/run/agent.id"), "then");
  bool kept = false;
  auto v = Volume::Open(config_.state);
  ASSERT_TRUE(v->OpenBookkeeping());
  auto snapshots = ListSnapshots(*v);
  ASSERT_TRUE(snapshots);
  for (const auto& s : *snapshots) {
    if (s.name.starts_with("before-restore-")) {
      kept = test::ReadFile(SnapshotPath(*v, s.name) + "/agent.id") == "now";
    }
  }
  EXPECT_TRUE(kept) << "the state it replaced is a snapshot";
}

TEST_F(RestoreTest, AutoFindsTheStateLayoutsRunDirectory) {
  ASSERT_NO_FATAL_FAILURE(MakeVolume(Layout::kState, "then", "now"));
  ASSERT_TRUE(Run("old"));
  EXPECT_EQ(test::ReadFile(t_ / "state/data/run/agent.id"), "then");
  EXPECT_FALSE(test::Exists(t_ / "state/run"));
}

TEST_F(RestoreTest, RefusesWithExit75WhileTheVolumeIsHeld) {
  ASSERT_NO_FATAL_FAILURE(MakeVolume(Layout::kRun, "then", "now"));
  auto held = VolumeLock::Acquire(*Dir::OpenTrusted(t_ / "state/.agent-init"), 0, Mode::kExec);
  ASSERT_TRUE(held);
  auto r = Run("old");
  ASSERT_FALSE(r);
  EXPECT_EQ(ExitCodeFor(r.error().kind), 75);
  EXPECT_NE(r.error().hint.find("stop the agent"), std::string::npos) << r.error().hint;
  EXPECT_EQ(test::ReadFile(t_ / "state/run/agent.id"), "now") << "nothing changed";
}

TEST_F(RestoreTest, UnknownNamesAndFreshVolumesAre64) {
  test::MakeDirs(t_ / "state");
  auto fresh = Run("old");
  ASSERT_FALSE(fresh);
  EXPECT_EQ(ExitCodeFor(fresh.error().kind), 64);
  EXPECT_NE(fresh.error().msg.find("agent-init never ran on it"), std::string::npos);

  ASSERT_NO_FATAL_FAILURE(MakeVolume(Layout::kRun, "then", "now"));
  for (const char* name : {"nope", "../run", ".partial"}) {
    auto r = Run(name);
    ASSERT_FALSE(r) << name;
    EXPECT_EQ(ExitCodeFor(r.error().kind), 64) << name;
  }
  EXPECT_EQ(test::ReadFile(t_ / "state/run/agent.id"), "now");
}

// A symlink planted under snapshots/ (the volume is writable by whoever
// owns the node directory) is refused as every symlink in the volume is:
// 77, and nothing changes.
TEST_F(RestoreTest, APlantedSymlinkUnderSnapshotsIs77) {
  ASSERT_NO_FATAL_FAILURE(MakeVolume(Layout::kRun, "then", "now"));
  test::WriteFile(t_ / "elsewhere/agent.id", "planted");
  test::Symlink(t_ / "elsewhere", t_ / "state/.agent-init/snapshots/planted");
  test::WriteFile(t_ / "state/.agent-init/snapshots/a-file", "not a snapshot");
  for (const char* name : {"planted", "a-file"}) {
    auto r = Run(name);
    ASSERT_FALSE(r) << name;
    EXPECT_EQ(ExitCodeFor(r.error().kind), 77) << name << ": " << r.error().msg;
    EXPECT_NE(r.error().msg.find(name), std::string::npos) << r.error().msg;
  }
  EXPECT_EQ(test::ReadFile(t_ / "state/run/agent.id"), "now");
}

TEST_F(RestoreTest, TheRestoredStateIsHandedToTheUser) {
  ASSERT_NO_FATAL_FAILURE(MakeVolume(Layout::kRun, "then", "now"));
  ASSERT_TRUE(Run("old", Credentials{4242, 4343, {}, "", ""}));
  EXPECT_TRUE(ops_.Chowned(t_ / "state/run/agent.id", 4242, 4343));
}

}  // namespace
}  // namespace agent_init
