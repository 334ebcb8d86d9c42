#include "volume/identity.h"

#include <gtest/gtest.h>

namespace agent_init {
namespace {

const IdentityPlace& Place(const IdentityPlan& plan, std::string_view name, AgentDir dir) {
  for (const auto& p : plan.places) {
    if (p.file->name == name && p.file->dir == dir) return p;
  }
  ADD_FAILURE() << "no place for " << name;
  return plan.places.front();
}

IdentityOptions Options(Layout layout) {
  IdentityOptions o;
  o.layout = layout;
  o.home = "/usr/share/elastic-agent";
  o.vh_name = "elastic-agent-9b2fec";
  o.state = "/usr/share/elastic-agent/state";
  return o;
}

TEST(IdentityPlan, StateLayoutWithoutConfigPathIsTheAgentsOwn) {
  IdentityPlan plan = PlanIdentity(Options(Layout::kState));
  EXPECT_TRUE(plan.config_path.empty());
  EXPECT_TRUE(plan.warnings.empty());
  for (const auto& p : plan.places) EXPECT_EQ(p.keeping, Keeping::kOnVolume) << p.file->name;
  EXPECT_EQ(Place(plan, "fleet.enc", AgentDir::kConfig).agent_path, "/usr/share/elastic-agent/state/fleet.enc");
  EXPECT_EQ(Place(plan, "state.enc", AgentDir::kHome).volume_rel, "data/state.enc");
}

// ECK's CONFIG_PATH for Fleet agents before 8.13: the image's home.
TEST(IdentityPlan, StateLayoutWithConfigPathOutsideTheVolumePointsItAtTheVolume) {
  IdentityOptions o = Options(Layout::kState);
  o.config_path = "/usr/share/elastic-agent";
  IdentityPlan plan = PlanIdentity(o);
  EXPECT_EQ(plan.config_path, "/usr/share/elastic-agent/state");
  const IdentityPlace& fleet = Place(plan, "fleet.enc", AgentDir::kConfig);
  EXPECT_EQ(fleet.keeping, Keeping::kConfigPath);
  EXPECT_EQ(fleet.agent_path, "/usr/share/elastic-agent/state/fleet.enc") << "where the agent will look for it";
  EXPECT_EQ(fleet.volume_rel, "fleet.enc");
  EXPECT_EQ(Place(plan, "state.enc", AgentDir::kHome).keeping, Keeping::kOnVolume);
}

TEST(IdentityPlan, StateLayoutWithConfigPathBelowTheVolumeIsLeftAlone) {
  IdentityOptions o = Options(Layout::kState);
  o.config_path = "/usr/share/elastic-agent/state/config";
  o.config_on_volume = true;
  IdentityPlan plan = PlanIdentity(o);
  EXPECT_TRUE(plan.config_path.empty());
  EXPECT_EQ(Place(plan, "vault", AgentDir::kConfig).volume_rel, "config/vault");
  EXPECT_EQ(Place(plan, "vault", AgentDir::kConfig).keeping, Keeping::kOnVolume);
}

TEST(IdentityPlan, RunLayoutWithMountsPutsTheHomeOnTheVolume) {
  IdentityOptions o = Options(Layout::kRun);
  o.mounts = true;
  IdentityPlan plan = PlanIdentity(o);
  EXPECT_TRUE(plan.home_mount);
  const IdentityPlace& fleet = Place(plan, "fleet.yml", AgentDir::kConfig);
  EXPECT_EQ(fleet.keeping, Keeping::kHomeMount);
  EXPECT_EQ(fleet.agent_path, "/usr/share/elastic-agent/fleet.yml");
  EXPECT_EQ(fleet.volume_rel, "home/fleet.yml");
  // The versioned home holds the executables: exec mode cannot keep these.
  const IdentityPlace& store = Place(plan, "action_store.yml", AgentDir::kHome);
  EXPECT_EQ(store.keeping, Keeping::kLost);
  EXPECT_EQ(store.agent_path, "/usr/share/elastic-agent/data/elastic-agent-9b2fec/action_store.yml");
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_NE(plan.warnings[0].find("action_store.yml"), std::string::npos) << plan.warnings[0];
  EXPECT_NE(plan.warnings[0].find("--supervise"), std::string::npos) << plan.warnings[0];
}

TEST(IdentityPlan, RunLayoutSupervisedKeepsEverythingWithoutMounts) {
  IdentityOptions o = Options(Layout::kRun);
  o.supervised = true;
  IdentityPlan plan = PlanIdentity(o);
  EXPECT_FALSE(plan.home_mount);
  EXPECT_TRUE(plan.warnings.empty());
  for (const auto& p : plan.places) EXPECT_EQ(p.keeping, Keeping::kSupervisor) << p.file->name;
  EXPECT_EQ(Place(plan, "state.yml", AgentDir::kHome).volume_rel, "versioned-home/state.yml");
}

TEST(IdentityPlan, RunLayoutInExecModeWithoutMountsWarnsNamingTheFilesAndTheFixes) {
  IdentityPlan plan = PlanIdentity(Options(Layout::kRun));
  EXPECT_EQ(Place(plan, "fleet.yml", AgentDir::kConfig).keeping, Keeping::kLost);
  ASSERT_EQ(plan.warnings.size(), 2u);
  EXPECT_NE(plan.warnings[0].find("/usr/share/elastic-agent/{fleet.yml"), std::string::npos) << plan.warnings[0];
  EXPECT_NE(plan.warnings[0].find("--supervise"), std::string::npos);
  EXPECT_NE(plan.warnings[0].find("mount permission"), std::string::npos);
}

TEST(FleetEnroll, OnlyTheEntrypointsOwnValueCounts) {
  EXPECT_FALSE(DecideFleetEnroll("", "", true, true, "f").unset);
  EXPECT_FALSE(DecideFleetEnroll("true", "", true, true, "f").unset) << "7.x's entrypoint tests == 1";
  EXPECT_TRUE(DecideFleetEnroll("1", "", true, true, "f").unset);
}

TEST(FleetEnroll, EnrolledOnTheVolumeIsNotEnrolledAgain) {
  EnrolDecision d = DecideFleetEnroll("1", "", /*enrolled=*/true, /*kept=*/true, "/home/fleet.yml");
  EXPECT_TRUE(d.unset);
  EXPECT_NE(d.message.find("FLEET_FORCE"), std::string::npos) << d.message;
  EXPECT_FALSE(DecideFleetEnroll("1", "1", true, true, "f").unset) << "FLEET_FORCE enrols again";
}

TEST(FleetEnroll, AnEnrolmentThatIsNotKeptIsAWarning) {
  EnrolDecision d = DecideFleetEnroll("1", "", false, /*kept=*/false, "/home/fleet.yml");
  EXPECT_FALSE(d.unset);
  EXPECT_NE(d.message.find("/home/fleet.yml"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("unset FLEET_ENROLL once the agent is enrolled"), std::string::npos) << d.message;
  EXPECT_TRUE(DecideFleetEnroll("1", "", false, true, "f").message.empty()) << "the first enrolment, kept";
}

}  // namespace
}  // namespace agent_init
