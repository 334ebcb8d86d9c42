// The state layout (elastic-agent container, 7.13+) and --seed-data, through
// the real binary, on fixture homes of each generation. No root needed.
#include <unistd.h>

#include <gtest/gtest.h>

#include "binary.h"
#include "home_fixture.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

using test::AgentInit;
using test::Contains;
using test::RunResult;

class StateLayoutCli : public ::testing::Test {
 protected:
  // A 7.13-like image: downloads (install at run time), no components.
  void Image(const std::string& vh, const std::vector<std::string>& dirs) {
    test::HomeFixture f(t_ / "home");
    f.VersionedHome(vh, dirs);
    f.HomeSymlink(f.Vh(vh) + "/elastic-agent");
    test::MakeDirs(t_ / "home/data/tmp");
    test::MakeDirs(t_ / "state");
    vh_ = t_ / "home/data/" + vh;
  }
  std::vector<std::string> Args(std::vector<std::string> more) {
    // --method symlink: no test here mounts anything on the host.
    std::vector<std::string> a{"--home", t_ / "home", "--state", t_ / "state", "--method", "symlink"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  std::string Link(const std::string& rel) {
    char buf[4096] = {};
    return ::readlink((t_ / rel).c_str(), buf, sizeof buf - 1) > 0 ? buf : "";
  }
  test::TempDir t_;
  std::string vh_;
};

TEST_F(StateLayoutCli, Generation713GetsStatePathAndInstallAndTmpInTheImage) {
  Image("elastic-agent-aaaaaa", {"downloads"});
  RunResult r =
      AgentInit(Args({"--", "/bin/sh", "-c", "echo STATE_PATH=$STATE_PATH; : elastic-agent container"}),
                {"STATE_PATH"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "STATE_PATH=" + t_ / "state\n")) << r.out;
  EXPECT_EQ(Link("state/data/install"), vh_ + "/install");
  EXPECT_EQ(Link("state/data/tmp"), t_ / "home/data/tmp");
  EXPECT_TRUE(test::IsDir(t_ / "state/data/run"));
  EXPECT_FALSE(test::Exists(vh_ + "/run")) << "the run layout was not used";
  RunResult again = AgentInit(Args({"--layout", "state", "prepare"}));
  EXPECT_EQ(again.status, 0) << again.err;
}

TEST_F(StateLayoutCli, AutoReadsTheEntrypointScript) {
  Image("elastic-agent-aaaaaa", {"downloads"});
  test::WriteFile(t_ / "docker-entrypoint", "#!/bin/sh\nelastic-agent container \"$@\"\n", 0755);
  RunResult r = AgentInit(Args({"inspect", "--json", "--", "/usr/bin/tini", "--", t_ / "docker-entrypoint"}));
  EXPECT_TRUE(Contains(r.out, "\"layout\":\"state\"")) << r.out;
  EXPECT_TRUE(Contains(r.out, "docker-entrypoint")) << "the evidence names the script: " << r.out;
  EXPECT_TRUE(Contains(r.out, "\"generation\":\"v1 (7.x - 8.5)\"")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\"state_run\":\"" + t_ / "state/data/run\"")) << r.out;
  RunResult run = AgentInit(Args({"inspect", "--json", "--", "elastic-agent", "run"}));
  EXPECT_TRUE(Contains(run.out, "\"layout\":\"run\"")) << run.out;
}

TEST_F(StateLayoutCli, StatePathElsewhereIs65NamingBoth) {
  Image("elastic-agent-aaaaaa", {"downloads"});
  RunResult r = AgentInit(Args({"--layout", "state", "prepare"}), {"STATE_PATH=/elsewhere"});
  EXPECT_EQ(r.status, 65);
  EXPECT_TRUE(Contains(r.err, "/elsewhere") && Contains(r.err, t_ / "state")) << r.err;
  EXPECT_EQ(AgentInit(Args({"--layout", "state", "prepare"}), {"STATE_PATH=" + t_ / "state/"}).status, 0);
}

TEST_F(StateLayoutCli, InstalledMarkerIsRefused) {
  Image("elastic-agent-bbbbbb", {"components"});
  test::WriteFile(t_ / "state/data/.installed", "");
  RunResult r = AgentInit(Args({"--layout", "state", "prepare"}));
  EXPECT_EQ(r.status, 65);
  EXPECT_TRUE(Contains(r.err, ".installed")) << r.err;
}

TEST_F(StateLayoutCli, Generation86LinksNothing) {
  Image("elastic-agent-bbbbbb", {"components"});
  RunResult r = AgentInit(Args({"--layout", "state", "prepare"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(test::Exists(t_ / "state/data/install"));
  EXPECT_FALSE(test::Exists(t_ / "state/data/tmp"));
  EXPECT_TRUE(test::IsDir(t_ / "state/data/run"));
}

// What 7.13 - 7.14 left on volumes: real install directories. They are kept
// aside (never deleted) and replaced by the links.
TEST_F(StateLayoutCli, InstallsLeftOnTheVolumeAreMovedAside) {
  Image("elastic-agent-aaaaaa", {"downloads"});
  test::WriteFile(t_ / "state/data/install/metricbeat-7.13.0/metricbeat", "old", 0755);
  test::MakeDirs(t_ / "state/data/tmp");  // empty: simply replaced
  RunResult r = AgentInit(Args({"--layout", "state", "prepare"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Link("state/data/install"), vh_ + "/install");
  EXPECT_TRUE(
      Contains(test::TreeDigest(t_ / "state/.agent-init/displaced"), "install/metricbeat-7.13.0/metricbeat"));
  EXPECT_TRUE(Contains(r.err, "moved aside")) << r.err;
}

TEST_F(StateLayoutCli, SnapshotsFollowTheStateLayout) {
  Image("elastic-agent-aaaaaa", {"downloads"});
  ASSERT_EQ(AgentInit(Args({"--layout", "state", "prepare"})).status, 0);
  test::WriteFile(t_ / "state/data/run/agent.id", "A");
  test::HomeFixture b(t_ / "home");
  b.VersionedHome("elastic-agent-bbbbbb", {"components"});
  RunResult r = AgentInit(Args({"--layout", "state", "--versioned-home", "elastic-agent-bbbbbb", "prepare"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(test::ReadFile(t_ / "state/.agent-init/snapshots/elastic-agent-aaaaaa/agent.id"), "A");
  test::WriteFile(t_ / "state/data/run/agent.id", "B");
  ASSERT_EQ(AgentInit({"--state", t_ / "state", "restore", "elastic-agent-aaaaaa"}).status, 0);
  EXPECT_EQ(test::ReadFile(t_ / "state/data/run/agent.id"), "A");
}

// --seed-data: what the init container does for a read-only root, then what
// the main container sees with the copy mounted at HOME/data (a symlink here).
TEST_F(StateLayoutCli, SeedDataThenTheMainContainerFindsEverythingInPlace) {
  Image("elastic-agent-aaaaaa", {"downloads", "install"});
  test::WriteFile(vh_ + "/downloads/metricbeat", "package", 0644);
  test::MakeDirs(t_ / "seed");
  RunResult seed = AgentInit(Args({"--layout", "run", "prepare", "--seed-data", t_ / "seed"}));
  ASSERT_EQ(seed.status, 0) << seed.err;
  EXPECT_EQ(test::ReadFile(t_ / "seed/elastic-agent-aaaaaa/downloads/metricbeat"), "package");
  EXPECT_EQ(Link("seed/elastic-agent-aaaaaa/run"), t_ / "state/run");
  EXPECT_FALSE(test::Exists(vh_ + "/run")) << "the image is not written";
  RunResult again = AgentInit(Args({"--layout", "run", "prepare", "--seed-data", t_ / "seed"}));
  EXPECT_EQ(again.status, 0);
  EXPECT_FALSE(Contains(again.err, "copied the image's data directory")) << "a complete copy is not redone";

  // The main container: HOME/data is the copy.
  test::MakeDirs(t_ / "main");
  test::Symlink(t_ / "seed", t_ / "main/data");
  test::Symlink(t_ / "main/data/elastic-agent-aaaaaa/elastic-agent", t_ / "main/elastic-agent");
  std::string before = test::TreeDigest(t_ / "seed");
  RunResult main =
      AgentInit({"--home", t_ / "main", "--state", t_ / "state", "--layout", "run", "--", "/bin/true"});
  EXPECT_EQ(main.status, 0) << main.err;
  EXPECT_TRUE(Contains(main.err, "already in place")) << main.err;
  EXPECT_EQ(test::TreeDigest(t_ / "seed"), before) << "nothing written to the data directory";
}

TEST_F(StateLayoutCli, SeedDataIsOnlyForPrepare) {
  Image("elastic-agent-aaaaaa", {"downloads"});
  EXPECT_EQ(AgentInit(Args({"--seed-data", t_ / "seed", "--", "/bin/true"})).status, 64);
  EXPECT_EQ(AgentInit(Args({"prepare", "--seed-data", t_ / "missing"})).status, 73);
}

}  // namespace
}  // namespace agent_init
