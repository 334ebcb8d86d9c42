// The layout change under a volume that holds state: what is planned, what
// moves, and the refusals, without root.
#include "volume/layout_transition.h"

#include <gtest/gtest.h>

#include "base/exit_codes.h"
#include "temp_dir.h"
#include "volume/snapshot.h"

namespace agent_init {
namespace {

class LayoutTransitionTest : public ::testing::Test {
 protected:
  // A volume that `last` used (nothing recorded when std::nullopt), with
  // its identity and a component's state in that layout's run directory.
  void UsedBy(std::optional<Layout> last, const std::string& id = "the-identity") {
    std::string run = t_ / "state/" + std::string(Volume::RunRel(last.value_or(Layout::kRun)));
    test::WriteFile(run + "/agent.id", id);
    test::WriteFile(run + "/log-default/registry/filebeat/log.json", "offsets");
    test::Symlink("log-default", run + "/link");
    if (last) test::WriteFile(t_ / "state/.agent-init/layout", std::string(LayoutName(*last)) + "\n");
  }
  Volume Open() {
    auto v = Volume::Open(t_ / "state");
    EXPECT_TRUE(v);
    EXPECT_TRUE(v->MakeBookkeeping());
    return std::move(*v);
  }
  std::string Digest(Layout layout) {
    return test::TreeDigest(t_ / "state/" + std::string(Volume::RunRel(layout)));
  }
  test::TempDir t_;
};

TEST_F(LayoutTransitionTest, RunToStateMovesTheStateAfterASnapshot) {
  UsedBy(Layout::kRun);
  const std::string before = Digest(Layout::kRun);
  Volume v = Open();
  auto plan = PlanLayoutTransition(v, Layout::kState);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->what, LayoutTransition::What::kMove);
  EXPECT_EQ(plan->entries, 3u);
  auto moved = CarryOverLayout(v, Layout::kState, 2, "ID");
  ASSERT_TRUE(moved) << moved.error().msg;
  EXPECT_TRUE(*moved);
  EXPECT_EQ(Digest(Layout::kState), before) << "identity, component state and symlink arrive intact";
  EXPECT_FALSE(test::Exists(t_ / "state/run")) << "the volume shows one layout";
  EXPECT_EQ(test::TreeDigest(SnapshotPath(v, "layout-run-to-state")), before) << "snapshot first";
  EXPECT_EQ(test::ReadFile(t_ / "state/.agent-init/layout"), "state\n");
  EXPECT_FALSE(test::Exists(t_ / "state/.agent-init/journal"));
  auto again = CarryOverLayout(v, Layout::kState, 2, "ID2");
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again) << "a second start finds nothing to carry";
}

// The operator rolls back from a 7.13+ image to 7.12.
TEST_F(LayoutTransitionTest, StateToRunIsTheRollback) {
  UsedBy(Layout::kState);
  const std::string before = Digest(Layout::kState);
  Volume v = Open();
  auto moved = CarryOverLayout(v, Layout::kRun, 0, "ID");
  ASSERT_TRUE(moved) << moved.error().msg;
  EXPECT_TRUE(*moved);
  EXPECT_EQ(Digest(Layout::kRun), before);
  EXPECT_FALSE(test::Exists(t_ / "state/data/run"));
  EXPECT_FALSE(test::Exists(t_ / "state/.agent-init/snapshots")) << "--keep-snapshots 0 takes none";
  EXPECT_EQ(test::ReadFile(t_ / "state/.agent-init/layout"), "run\n");
}

// A volume from before the record: the state is where the other layout keeps
// it and nothing is where this one does, so it moves.
TEST_F(LayoutTransitionTest, AnUnrecordedVolumeMovesWhenNothingIsInTheWay) {
  UsedBy(std::nullopt);
  const std::string before = Digest(Layout::kRun);
  Volume v = Open();
  auto moved = CarryOverLayout(v, Layout::kState, 1, "ID");
  ASSERT_TRUE(moved) << moved.error().msg;
  EXPECT_TRUE(*moved);
  EXPECT_EQ(Digest(Layout::kState), before);
}

TEST_F(LayoutTransitionTest, TheSameLayoutAgainMovesNothing) {
  UsedBy(Layout::kRun);
  test::WriteFile(t_ / "state/data/run/agent.id", "left by someone");
  Volume v = Open();
  auto moved = CarryOverLayout(v, Layout::kRun, 2, "ID");
  ASSERT_TRUE(moved) << moved.error().msg;
  EXPECT_FALSE(*moved);
  EXPECT_EQ(test::ReadFile(t_ / "state/run/agent.id"), "the-identity");
  EXPECT_EQ(test::ReadFile(t_ / "state/data/run/agent.id"), "left by someone");
}

// Both places hold state, and it differs: two identities. agent-init does
// not choose: 65, naming both and the commands that resolve it.
TEST_F(LayoutTransitionTest, DifferentStateInBothPlacesIs65AndMovesNothing) {
  UsedBy(Layout::kRun);
  test::WriteFile(t_ / "state/data/run/agent.id", "another-identity");
  const std::string run = Digest(Layout::kRun), data_run = Digest(Layout::kState);
  Volume v = Open();
  auto moved = CarryOverLayout(v, Layout::kState, 2, "ID");
  ASSERT_FALSE(moved);
  EXPECT_EQ(ExitCodeFor(moved.error().kind), 65);
  const std::string& msg = moved.error().msg;
  EXPECT_NE(msg.find(t_ / "state/run"), std::string::npos) << msg;
  EXPECT_NE(msg.find(t_ / "state/data/run"), std::string::npos) << msg;
  EXPECT_NE(moved.error().hint.find("mv " + t_ / "state/data/run"), std::string::npos) << moved.error().hint;
  EXPECT_EQ(Digest(Layout::kRun), run);
  EXPECT_EQ(Digest(Layout::kState), data_run);
  EXPECT_EQ(test::ReadFile(t_ / "state/.agent-init/layout"), "run\n") << "not recorded: nothing changed";
}

TEST_F(LayoutTransitionTest, TheSameStateInBothPlacesKeepsOneCopy) {
  UsedBy(Layout::kRun);
  ASSERT_EQ(test::Shell("cp -a " + t_ / "state/run " + t_ / "state/data/"), 0);
  const std::string before = Digest(Layout::kRun);
  Volume v = Open();
  auto moved = CarryOverLayout(v, Layout::kState, 2, "ID");
  ASSERT_TRUE(moved) << moved.error().msg;
  EXPECT_EQ(Digest(Layout::kState), before);
  EXPECT_FALSE(test::Exists(t_ / "state/run"));
}

TEST_F(LayoutTransitionTest, AnUnreadableRecordIs65) {
  UsedBy(Layout::kRun);
  test::WriteFile(t_ / "state/.agent-init/layout", "sideways\n");
  Volume v = Open();
  auto plan = PlanLayoutTransition(v, Layout::kState);
  ASSERT_FALSE(plan);
  EXPECT_EQ(ExitCodeFor(plan.error().kind), 65);
  EXPECT_NE(plan.error().msg.find("sideways"), std::string::npos);
}

}  // namespace
}  // namespace agent_init
