#include "volume/migrate.h"

#include <gtest/gtest.h>

#include <optional>

#include "temp_dir.h"

namespace agent_init {
namespace {

struct MigrateFixture {
  test::TempDir t;
  Dir image_run, state_run;
  std::optional<Volume> opened;
  Volume& volume() { return *opened; }
  MigrateFixture() {
    test::MakeDirs(t / "image/run");
    test::MakeDirs(t / "state/run");
    test::MakeDirs(t / "state/.agent-init");
  }
  void Open() {
    image_run = *Dir::OpenTrusted(t / "image/run");
    state_run = *Dir::OpenTrusted(t / "state/run");
    opened.emplace(Volume::Open(t / "state").value());
    opened->MakeBookkeeping().value();
  }
};

TEST(Migrate, MovesNewEntriesAndKeepsTheVolumesCopyOnConflict) {
  MigrateFixture f;
  test::WriteFile(f.t / "image/run/only-image", "image");
  test::WriteFile(f.t / "image/run/same", "equal");
  test::WriteFile(f.t / "image/run/both", "image-version");
  test::WriteFile(f.t / "image/run/dir/inner-new", "n");
  test::WriteFile(f.t / "image/run/dir/inner-both", "image-inner");
  test::WriteFile(f.t / "state/run/same", "equal");
  test::WriteFile(f.t / "state/run/both", "volume-version");
  test::WriteFile(f.t / "state/run/dir/inner-both", "volume-inner");
  f.Open();
  auto r = MigrateRun(f.image_run, f.state_run, f.volume(), "ID1");
  ASSERT_TRUE(r) << r.error().msg;

  EXPECT_EQ(test::ReadFile(f.t / "state/run/only-image"), "image");
  EXPECT_EQ(test::ReadFile(f.t / "state/run/same"), "equal");
  EXPECT_EQ(test::ReadFile(f.t / "state/run/both"), "volume-version");
  EXPECT_EQ(test::ReadFile(f.t / "state/run/dir/inner-new"), "n");
  EXPECT_EQ(test::ReadFile(f.t / "state/run/dir/inner-both"), "volume-inner");
  // Nothing lost: the image's losing copies are kept aside.
  EXPECT_EQ(test::ReadFile(f.t / "state/.agent-init/conflicts/ID1/both"), "image-version");
  EXPECT_EQ(test::ReadFile(f.t / "state/.agent-init/conflicts/ID1/dir/inner-both"), "image-inner");
  EXPECT_EQ(r->conflicts.size(), 2u);
  EXPECT_EQ(r->identical, 1u);
  // The image side is empty, the work area and journal are gone.
  EXPECT_TRUE(test::IsDir(f.t / "image/run"));
  EXPECT_EQ(test::TreeDigest(f.t / "image/run"), "");
  EXPECT_FALSE(test::Exists(f.t / "state/.agent-init/migrate"));
  EXPECT_FALSE(test::Exists(f.t / "state/.agent-init/journal"));
}

// A symlink on both sides is one state when it points at the same place,
// a conflict when not.
TEST(Migrate, SymlinksToTheSameTargetAreIdentical) {
  MigrateFixture f;
  test::Symlink("comp", f.t / "image/run/same-link");
  test::Symlink("comp", f.t / "state/run/same-link");
  test::Symlink("image-target", f.t / "image/run/other-link");
  test::Symlink("volume-target", f.t / "state/run/other-link");
  f.Open();
  auto r = MigrateRun(f.image_run, f.state_run, f.volume(), "ID3");
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_EQ(r->identical, 1u);
  ASSERT_EQ(r->conflicts.size(), 1u);
  EXPECT_TRUE(test::IsSymlink(f.t / "state/.agent-init/conflicts/ID3/other-link"));
  EXPECT_FALSE(test::Exists(f.t / "state/.agent-init/conflicts/ID3/same-link"));
  EXPECT_EQ(test::TreeDigest(f.t / "image/run"), "");
}

TEST(Migrate, TypeClashGoesAsideWhole) {
  MigrateFixture f;
  test::WriteFile(f.t / "image/run/x/file", "in a dir");
  test::WriteFile(f.t / "state/run/x", "a file");
  f.Open();
  ASSERT_TRUE(MigrateRun(f.image_run, f.state_run, f.volume(), "ID2"));
  EXPECT_EQ(test::ReadFile(f.t / "state/run/x"), "a file");
  EXPECT_EQ(test::ReadFile(f.t / "state/.agent-init/conflicts/ID2/x/file"), "in a dir");
}

TEST(Migrate, ASymlinkPlantedInTheVolumeIsNeverFollowed) {
  MigrateFixture f;
  test::WriteFile(f.t / "image/run/dir/secret", "image");
  test::MakeDirs(f.t / "outside");
  test::Symlink(f.t / "outside", f.t / "state/run/dir");
  f.Open();
  ASSERT_TRUE(MigrateRun(f.image_run, f.state_run, f.volume(), "ID3"));
  EXPECT_FALSE(test::Exists(f.t / "outside/secret"));
  EXPECT_TRUE(test::IsSymlink(f.t / "state/run/dir"));
  EXPECT_EQ(test::ReadFile(f.t / "state/.agent-init/conflicts/ID3/dir/secret"), "image");
}

TEST(Migrate, ResumesFromMergePhase) {
  MigrateFixture f;
  // A crash after collect: the entries wait in incoming, the image is empty.
  test::WriteFile(f.t / "state/.agent-init/migrate/incoming/agent.id", "ID");
  f.Open();
  Journal& journal = f.volume().journal();
  Intent intent{"migrate", "ID4", "merge", {}};
  ASSERT_TRUE(journal.Write(intent));
  auto r = ResumeMigration(intent, &f.image_run, f.state_run, f.volume());
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_EQ(test::ReadFile(f.t / "state/run/agent.id"), "ID");
  EXPECT_FALSE(test::Exists(f.t / "state/.agent-init/journal"));
}

}  // namespace
}  // namespace agent_init

namespace agent_init {
namespace {

// Leftovers in the work area (a journal removed by hand, or planted) are not
// taken for complete copies of the image's state.
TEST(Migrate, LeftoversInTheWorkAreaDoNotStandInForTheImagesState) {
  MigrateFixture f;
  test::WriteFile(f.t / "image/run/agent.id", "image-id");
  test::WriteFile(f.t / "state/.agent-init/migrate/incoming/agent.id", "planted");
  f.Open();
  ASSERT_TRUE(MigrateRun(f.image_run, f.state_run, f.volume(), "ID5"));
  EXPECT_EQ(test::ReadFile(f.t / "state/run/agent.id"), "image-id");
}

}  // namespace
}  // namespace agent_init
