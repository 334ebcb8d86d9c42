// inspect as a library call: what it gathers, and the two renderings.
#include "commands/inspect.h"

#include <fcntl.h>

#include <gtest/gtest.h>

#include "base/sys.h"
#include "base/unique_fd.h"
#include "fake_privileged.h"
#include "home_fixture.h"
#include "temp_dir.h"
#include "volume/snapshot.h"

namespace agent_init {
namespace {

class InspectTest : public ::testing::Test {
 protected:
  void SetUp() override { config_ = test::Config711(t_.path(), Mode::kInspect); }
  InspectReport Run(const std::vector<std::string>& command = {}) { return Inspect(config_, command, ops_); }
  bool HasProblem(const InspectReport& r, const std::string& code) {
    for (const auto& p : r.problems)
      if (p.code == code) return true;
    return false;
  }
  test::TempDir t_;
  Config config_;
  test::FakePrivileged ops_;
};

TEST_F(InspectTest, The711ImageOnAFreshVolume) {
  InspectReport r = Run();
  EXPECT_EQ(r.versioned_home, t_ / "home/data/elastic-agent-9b2fec");
  EXPECT_EQ(r.discovery.rule, Rule::kHomeSymlink);
  EXPECT_EQ(r.state_run, t_ / "state/run");
  EXPECT_EQ(r.layout.layout, Layout::kRun);
  EXPECT_EQ(r.layout.generation, Generation::kV1) << "inspect always looks the generation up";
  EXPECT_FALSE(r.prepared);
  EXPECT_TRUE(r.problems.empty()) << r.problems.front().message;
  EXPECT_FALSE(r.places.empty()) << "the mounts of STATE and the executable places";
  EXPECT_FALSE(test::Exists(t_ / "state/.agent-init")) << "inspect changes nothing";
}

// The identity section: each of the agent's own files, where the agent will
// look for it, whether that is the volume, and what a recreation loses.
TEST_F(InspectTest, TheIdentitySectionSaysWhatARecreationLoses) {
  auto entry = [](const InspectReport& r, const std::string& file) {
    for (const auto& e : r.identity)
      if (e.file == file) return e;
    ADD_FAILURE() << "no " << file;
    return IdentityEntry{};
  };
  ops_.may_mount = false;  // 7.11 in exec mode without mount permission
  InspectReport r = Run();
  IdentityEntry fleet = entry(r, "fleet.yml");
  EXPECT_EQ(fleet.agent_path, t_ / "home/fleet.yml");
  EXPECT_FALSE(fleet.on_volume);
  EXPECT_EQ(fleet.kept, "lost in exec mode; kept with --supervise");
  EXPECT_EQ(fleet.volume_path, t_ / "state/home/fleet.yml");
  EXPECT_NE(fleet.loss.find("agent ID"), std::string::npos) << fleet.loss;
  ops_.may_mount = true;  // the bind method: the home on the volume
  r = Run();
  fleet = entry(r, "fleet.yml");
  EXPECT_TRUE(fleet.on_volume);
  EXPECT_EQ(fleet.kept, "home mount");
  EXPECT_EQ(fleet.loss, "nothing");
  EXPECT_FALSE(entry(r, "action_store.yml").on_volume) << "the versioned home's: only --supervise keeps them";
  const std::string json = RenderJson(r);
  EXPECT_NE(json.find("\"identity\":[{\"file\":\"fleet.yml\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"recreation_loses\":\"nothing\""), std::string::npos);
  EXPECT_NE(RenderText(r).find("agent file:"), std::string::npos);
}

// ECK's CONFIG_PATH: the agent gets the volume instead.
TEST_F(InspectTest, AConfigPathOutsideTheVolumeIsPointedAtIt) {
  ::setenv("CONFIG_PATH", config_.home.c_str(), 1);
  InspectReport r = Run({config_.home + "/elastic-agent", "container"});
  ::unsetenv("CONFIG_PATH");
  ASSERT_TRUE(r.config_path_for_agent);
  EXPECT_EQ(*r.config_path_for_agent, t_ / "state");
  for (const auto& e : r.identity) {
    if (e.file == "fleet.enc") {
      EXPECT_TRUE(e.on_volume);
      EXPECT_EQ(e.agent_path, t_ / "state/fleet.enc");
      EXPECT_EQ(e.kept, "CONFIG_PATH");
    }
  }
}

TEST_F(InspectTest, TheMethodIsPredictedFromTheMountCapability) {
  ops_.may_mount = false;
  EXPECT_EQ(Run().method, "symlink");
  ops_.may_mount = true;
  InspectReport r = Run();
  EXPECT_EQ(r.method, "bind");
  EXPECT_NE(r.method_reason.find("CAP_SYS_ADMIN"), std::string::npos);
  config_.method = Method::kSymlink;
  EXPECT_EQ(Run().method, "symlink") << "an explicit method wins";
}

TEST_F(InspectTest, TheStateLayoutForAContainerCommand) {
  InspectReport r = Run({"elastic-agent", "container"});
  EXPECT_EQ(r.layout.layout, Layout::kState);
  EXPECT_EQ(r.state_run, t_ / "state/data/run");
  EXPECT_EQ(r.method, "symlink") << "7.x: install and tmp are linked";
}

TEST_F(InspectTest, ProblemsAndAnUnfinishedChange) {
  test::WriteFile(t_ / "state/.agent-init/journal",
                  "format agent-init-journal-1\nop snapshot\nid elastic-agent-aaaaaa\nphase publish\n");
  InspectReport r = Run();
  ASSERT_TRUE(r.pending_change);
  EXPECT_EQ(*r.pending_change, "snapshot elastic-agent-aaaaaa (phase publish)");

  config_.state = t_ / "missing";
  config_.versioned_home = "elastic-agent-000000";
  InspectReport bad = Run();
  EXPECT_TRUE(HasProblem(bad, "state-missing"));
  for (const auto& p : bad.problems) {
    if (p.code != "state-missing") continue;
    EXPECT_EQ(p.message.rfind("open state volume: ", 0), 0u) << p.message;
    EXPECT_NE(p.message.find("mount the persistent volume"), std::string::npos)
        << "the same fix as prepare's";
  }
  EXPECT_TRUE(HasProblem(bad, "layout"));
  EXPECT_FALSE(bad.versioned_home);
}

TEST_F(InspectTest, TheRenderingsCarryTheSameFacts) {
  InspectReport r = Run();
  std::string json = RenderJson(r);
  std::string text = RenderText(r);
  for (const std::string& fact : {std::string("elastic-agent-9b2fec"), t_ / "state/run"}) {
    EXPECT_NE(json.find(fact), std::string::npos) << fact << "\n" << json;
    EXPECT_NE(text.find(fact), std::string::npos) << fact << "\n" << text;
  }
  EXPECT_NE(json.find("\"versioned_home_evidence\":\"home-symlink\""), std::string::npos) << json;
  EXPECT_NE(text.find("(by home-symlink)"), std::string::npos) << text;
  EXPECT_EQ(json.back(), '\n');
  EXPECT_NE(text.find("no problems"), std::string::npos);
}

// The volume's filesystem, and what that means for snapshots.
TEST_F(InspectTest, TheVolumesFilesystemAndWhetherSnapshotsShareExtents) {
  InspectReport r = Run();
  UniqueFd state(::open((t_ / "state").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(state.valid());
  EXPECT_EQ(r.state_filesystem, sys::FilesystemName(state.get()));
  EXPECT_EQ(r.state_reflink, ReflinkOf(r.state_filesystem));
  std::string json = RenderJson(r), text = RenderText(r);
  EXPECT_NE(json.find("\"state_filesystem\":\"" + r.state_filesystem + "\""), std::string::npos) << json;
  EXPECT_NE(text.find("filesystem:       " + r.state_filesystem + " (reflink: " + r.state_reflink + ")"),
            std::string::npos)
      << text;
  EXPECT_TRUE(ReflinkOf("btrfs").starts_with("yes; subvolume snapshots"));
  EXPECT_EQ(ReflinkOf("ext4"), "no: snapshots are full copies");
  EXPECT_TRUE(ReflinkOf("0x1234").starts_with("unknown"));
}

}  // namespace
}  // namespace agent_init
