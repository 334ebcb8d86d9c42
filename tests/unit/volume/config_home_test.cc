#include "volume/config_home.h"

#include <gtest/gtest.h>

#include <optional>

#include "fake_privileged.h"
#include "home_fixture.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

std::vector<const AgentFile*> ConfigFiles() {
  std::vector<const AgentFile*> out;
  for (const AgentFile* f : AgentFilesFor(Layout::kRun)) {
    if (f->dir == AgentDir::kConfig) out.push_back(f);
  }
  return out;
}

struct HomeOnVolume : ::testing::Test {
  test::TempDir t;
  std::optional<Volume> volume;
  void SetUp() override {
    test::Make711Home(t / "home");
    test::WriteFile(t / "home/elastic-agent.yml", "outputs: {}\n");
    test::WriteFile(t / "home/LICENSE.txt", "license");
    test::MakeDirs(t / "state");
  }
  Result<ConfigHome> Prepare() {
    volume.emplace(Volume::Open(t / "state").value());
    EXPECT_TRUE(volume->MakeBookkeeping());
    return PrepareConfigHome(*Dir::OpenTrusted(t / "home"), *volume, ConfigFiles());
  }
};

// STATE/home becomes the agent's HOME: the image's files copied, a mount
// point for data/, the agent's own fleet.yml carried from an older start.
TEST_F(HomeOnVolume, HoldsTheImagesFilesAMountPointForDataAndTheAgentsOwn) {
  test::WriteFile(t / "home/fleet.yml", "agent:\n  id: older-start\n");
  auto home = Prepare();
  ASSERT_TRUE(home) << home.error().msg;
  EXPECT_FALSE(home->in_place);
  EXPECT_EQ(home->attach, std::vector<std::string>{"data"});
  EXPECT_TRUE(test::IsDir(t / "state/home/data")) << "a mount point";
  EXPECT_EQ(test::ReadFile(t / "state/home/LICENSE.txt"), "license");
  EXPECT_EQ(test::ReadFile(t / "state/home/.build_hash.txt"), test::ReadFile(t / "home/.build_hash.txt"));
  EXPECT_TRUE(test::IsSymlink(t / "state/home/elastic-agent"));
  EXPECT_EQ(test::ReadFile(t / "state/home/elastic-agent.yml"), "outputs: {}\n") << "follows the image";
  EXPECT_EQ(test::ReadFile(t / "state/home/fleet.yml"), "agent:\n  id: older-start\n") << "carried";
}

// The volume's identity stays the agent's across image changes; the image's
// files follow the image, and one a newer image dropped goes.
TEST_F(HomeOnVolume, TheImagesFilesFollowTheImageTheAgentsStay) {
  ASSERT_TRUE(Prepare());
  test::WriteFile(t / "state/home/fleet.yml", "agent:\n  id: kept\n");
  test::WriteFile(t / "state/home/elastic-agent.yml", "fleet:\n  enabled: true\n");  // enrolment wrote it
  // A newer image: another license, no LICENSE.txt at all, a new file.
  ::unlink((t / "home/LICENSE.txt").c_str());
  test::WriteFile(t / "home/NOTICE.txt", "notice");
  test::WriteFile(t / "home/elastic-agent.yml", "outputs: {new: 1}\n");
  test::WriteFile(t / "home/fleet.yml", "agent:\n  id: other\n");
  auto home = Prepare();
  ASSERT_TRUE(home) << home.error().msg;
  EXPECT_EQ(test::ReadFile(t / "state/home/fleet.yml"), "agent:\n  id: kept\n");
  EXPECT_EQ(test::ReadFile(t / "state/home/elastic-agent.yml"), "fleet:\n  enabled: true\n");
  EXPECT_EQ(test::ReadFile(t / "state/home/NOTICE.txt"), "notice");
  EXPECT_FALSE(test::Exists(t / "state/home/LICENSE.txt")) << "gone with the image";
}

// Mounted: STATE/home over HOME, then data/ attached again with the mounts
// below it (the run directory's bind); nothing when already in place.
TEST_F(HomeOnVolume, MountsTheHomeThenAttachesDataAgain) {
  auto home = Prepare();
  ASSERT_TRUE(home);
  test::FakePrivileged ops;
  ops.new_api_errno = 0;
  ASSERT_TRUE(MountConfigHome(*Dir::OpenTrusted(t / "home"), *home, ops));
  ASSERT_EQ(ops.binds.size(), 2u);
  char real[PATH_MAX];
  ASSERT_TRUE(::realpath((t / "state/home").c_str(), real));
  EXPECT_EQ(ops.binds[0].source, real);
  EXPECT_EQ(ops.binds[0].depth, BindDepth::kOne);
  ASSERT_TRUE(::realpath((t / "home/data").c_str(), real));
  EXPECT_EQ(ops.binds[1].source, real);
  EXPECT_EQ(ops.binds[1].depth, BindDepth::kTree);
}

// Half a home is worse than none: a failure after the first mount takes it
// away again.
TEST_F(HomeOnVolume, AFailedAttachDetachesTheHome) {
  auto home = Prepare();
  ASSERT_TRUE(home);
  test::FakePrivileged ops;
  ops.new_api_errno = 0;
  ops.binds_succeeding = 1;
  auto mounted = MountConfigHome(*Dir::OpenTrusted(t / "home"), *home, ops);
  ASSERT_FALSE(mounted);
  EXPECT_NE(mounted.error().msg.find("data"), std::string::npos) << mounted.error().msg;
  EXPECT_EQ(ops.detached.size(), 1u);
}

}  // namespace
}  // namespace agent_init
