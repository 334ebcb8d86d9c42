#include "volume/volume.h"

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace agent_init {
namespace {

TEST(Volume, TheRunDirectoryOfEachLayout) {
  EXPECT_EQ(Volume::RunRel(Layout::kRun), "run");
  EXPECT_EQ(Volume::RunRel(Layout::kState), "data/run");
  EXPECT_EQ(Volume::RunPathOf("/v//", Layout::kRun), "/v/run");
  EXPECT_EQ(Volume::RunPathOf("/v", Layout::kState), "/v/data/run");
}

TEST(Volume, HeldLayoutGoesByWhatTheVolumeHolds) {
  test::TempDir t;
  test::MakeDirs(t / "state");
  auto v = Volume::Open(t / "state");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->HeldLayout(), Layout::kRun) << "an empty volume";
  test::MakeDirs(t / "state/data/run");
  EXPECT_EQ(v->HeldLayout(), Layout::kState);
  test::MakeDirs(t / "state/run");
  EXPECT_EQ(v->HeldLayout(), Layout::kRun) << "both: the run layout's";
}

TEST(Volume, TheJournalFollowsTheVolumeWhenItMoves) {
  test::TempDir t;
  test::MakeDirs(t / "state");
  auto opened = Volume::Open(t / "state");
  ASSERT_TRUE(opened);
  ASSERT_TRUE(opened->MakeBookkeeping());
  Volume moved = std::move(*opened);
  ASSERT_TRUE(moved.journal().Write(Intent{"snapshot", "x", "copy", {}}));
  EXPECT_TRUE(test::Exists(t / "state/.agent-init/journal"));
  EXPECT_EQ(moved.journal().Path(), t / "state/.agent-init/journal");
  EXPECT_EQ(moved.BookkeepingPath("snapshots"), t / "state/.agent-init/snapshots");
}

TEST(Volume, BookkeepingIsOpenedOnlyWhenItExists) {
  test::TempDir t;
  test::MakeDirs(t / "state");
  auto v = Volume::Open(t / "state");
  auto opened = v->OpenBookkeeping();
  ASSERT_TRUE(opened);
  EXPECT_FALSE(*opened);
  EXPECT_FALSE(test::Exists(t / "state/.agent-init"));
  test::Symlink(t.path(), t / "state/.agent-init");
  auto planted = v->OpenBookkeeping();
  EXPECT_FALSE(planted) << "a symlink there is refused";
}

TEST(Volume, AMissingVolumeSaysWhatToMount) {
  test::TempDir t;
  auto v = Volume::Open(t / "nothing");
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().msg.rfind("open state volume: ", 0), 0u) << v.error().msg;
  EXPECT_NE(v.error().hint.find("AGENT_INIT_STATE"), std::string::npos);
}

}  // namespace
}  // namespace agent_init
