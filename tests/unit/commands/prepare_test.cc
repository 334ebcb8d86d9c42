// The prepare checklist as a library call, without root: fixture homes in a
// temporary directory, the mount and chown calls on a fake (the real ones
// are in tests/ns).
#include "commands/prepare.h"

#include <climits>
#include <cstdlib>

#include <gtest/gtest.h>

#include "base/exit_codes.h"
#include "fake_privileged.h"
#include "home_fixture.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

class PrepareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = test::Config711(t_.path(), Mode::kPrepare);
    config_.lock_timeout = 0;
  }
  Result<Prepared> Run(const std::optional<Credentials>& user = std::nullopt) {
    return Prepare(config_, user, {}, ops_);
  }
  std::string Vh(const std::string& rel = "") const {
    return t_ / "home/data/elastic-agent-9b2fec" + (rel.empty() ? "" : "/" + rel);
  }
  test::TempDir t_;
  Config config_;
  test::FakePrivileged ops_;
};

TEST_F(PrepareTest, RunLayoutFallsBackToTheSymlinkAndAnotherRunChangesNothing) {
  test::WriteFile(Vh("run/agent.id"), "image-id");
  auto first = Run();
  ASSERT_TRUE(first) << first.error().msg;
  EXPECT_EQ(first->layout, Layout::kRun);
  EXPECT_EQ(first->placement, Placement::kSymlink);
  EXPECT_TRUE(first->changed);
  EXPECT_EQ(first->versioned_home, Vh());
  EXPECT_EQ(ops_.BindCalls(), (std::vector<std::string>{"new-api", "mount(2)"}));
  EXPECT_EQ(test::ReadFile(t_ / "state/run/agent.id"), "image-id") << "migrated into the volume";
  EXPECT_TRUE(test::IsSymlink(Vh("run")));
  EXPECT_NE(test::ReadFile(t_ / "state/.agent-init/history").find("elastic-agent-9b2fec"), std::string::npos);
  first->lock = VolumeLock();  // prepare ends: the lock goes

  auto second = Run();
  ASSERT_TRUE(second) << second.error().msg;
  EXPECT_FALSE(second->changed);
}

TEST_F(PrepareTest, BindPermittedBinds) {
  ops_.new_api_errno = 0;
  auto r = Run();
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_EQ(r->placement, Placement::kBind);
  // The run directory, then the agent's home on the volume with the image's
  // data/ attached again (tests/ns/identity_ns_test.cc mounts them for real).
  EXPECT_EQ(ops_.BindCalls(), (std::vector<std::string>{"new-api", "new-api", "new-api"}));
  char real[PATH_MAX];
  ASSERT_TRUE(::realpath((t_ / "state/run").c_str(), real));
  EXPECT_EQ(ops_.binds[0].source, real) << "STATE/run is mounted";
  ASSERT_TRUE(::realpath(Vh("run").c_str(), real));
  EXPECT_EQ(ops_.binds[0].target, real) << "onto VH/run";
  ASSERT_TRUE(::realpath((t_ / "state/home").c_str(), real));
  EXPECT_EQ(ops_.binds[1].source, real) << "STATE/home";
  ASSERT_TRUE(::realpath((t_ / "home").c_str(), real));
  EXPECT_EQ(ops_.binds[1].target, real) << "onto HOME";
  EXPECT_EQ(ops_.binds[1].depth, BindDepth::kOne);
  ASSERT_TRUE(::realpath((t_ / "home/data").c_str(), real));
  EXPECT_EQ(ops_.binds[2].source, real) << "the image's data/, attached again";
  EXPECT_EQ(ops_.binds[2].depth, BindDepth::kTree) << "with the run directory's mount below it";
}

TEST_F(PrepareTest, UserGetsTheRunDirectoryAndTheBookkeeping) {
  Credentials agent{4242, 4343, {4343}, "agent", "/home/agent"};
  auto r = Run(agent);
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_TRUE(ops_.Chowned(t_ / "state/run", 4242, 4343));
  EXPECT_TRUE(ops_.Chowned(t_ / "state/.agent-init", 4242, 4343));
  EXPECT_TRUE(ops_.Chowned(t_ / "state/.agent-init/lock", 4242, 4343));
}

TEST_F(PrepareTest, StateLayoutSetsStatePathAndLinks7xInstallAndTmpIntoTheImage) {
  config_.layout = LayoutOption::kState;
  auto r = Run();
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_EQ(r->layout, Layout::kState);
  EXPECT_EQ(r->placement, Placement::kSymlink);
  ASSERT_EQ(r->environment.size(), 1u);
  EXPECT_EQ(r->environment[0].name, "STATE_PATH");
  EXPECT_EQ(r->environment[0].value, t_ / "state");
  EXPECT_TRUE(test::IsDir(t_ / "state/data/run"));
  EXPECT_TRUE(test::IsSymlink(t_ / "state/data/install"));
  EXPECT_TRUE(test::IsSymlink(t_ / "state/data/tmp"));
  EXPECT_TRUE(ops_.binds.empty()) << "the state layout mounts nothing";
}

TEST_F(PrepareTest, AnotherVersionedHomeSnapshotsThePreviousState) {
  ASSERT_TRUE(Run());
  test::WriteFile(t_ / "state/run/agent.id", "A");
  test::HomeFixture b(t_ / "home-b");
  b.VersionedHome("elastic-agent-bbbbbb", {"run"});
  config_.home = t_ / "home-b";
  auto r = Run();
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_EQ(test::ReadFile(t_ / "state/.agent-init/snapshots/elastic-agent-9b2fec/agent.id"), "A");
  EXPECT_EQ(test::ReadFile(t_ / "state/run/agent.id"), "A") << "the live state never moves";
}

TEST_F(PrepareTest, AMissingVolumeIs73AndSaysWhatToMount) {
  config_.state = t_ / "no-volume";
  auto r = Run();
  ASSERT_FALSE(r);
  EXPECT_EQ(ExitCodeFor(r.error().kind), 73);
  EXPECT_NE(r.error().hint.find("mount the persistent volume"), std::string::npos);
}

TEST_F(PrepareTest, ABrokenHomeIs65BeforeTheVolumeIsTouched) {
  config_.versioned_home = "elastic-agent-000000";
  auto r = Run();
  ASSERT_FALSE(r);
  EXPECT_EQ(ExitCodeFor(r.error().kind), 65);
  EXPECT_EQ(r.error().msg.rfind("find versioned home: ", 0), 0u) << r.error().msg;
  EXPECT_FALSE(test::Exists(t_ / "state/.agent-init"));
}

TEST_F(PrepareTest, AJournalOfAnUnknownChangeIs65AndNothingElseHappens) {
  test::WriteFile(t_ / "state/.agent-init/journal",
                  "format agent-init-journal-1\nop teleport\nid x\nphase one\n");
  auto r = Run();
  ASSERT_FALSE(r);
  EXPECT_EQ(ExitCodeFor(r.error().kind), 65);
  EXPECT_NE(r.error().msg.find("teleport"), std::string::npos) << r.error().msg;
  EXPECT_FALSE(test::Exists(t_ / "state/run"));
}

}  // namespace
}  // namespace agent_init
