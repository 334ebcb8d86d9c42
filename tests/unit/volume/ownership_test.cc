// The hand-over to --user without root: every chown goes to a fake that
// records it, so what is handed over, what is skipped and when the walk is
// repeated can be checked as any user.
#include "volume/ownership.h"

#include <unistd.h>

#include <algorithm>
#include <optional>

#include <gtest/gtest.h>

#include "base/exit_codes.h"
#include "fake_privileged.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

constexpr Ids kAgent{4242, 4343};

struct OwnFixture {
  test::TempDir t;
  test::FakePrivileged ops;
  std::optional<Volume> volume;
  Dir run;

  OwnFixture() {
    test::WriteFile(t / "state/run/agent.id", "ID");
    test::WriteFile(t / "state/run/comp/registry", "offsets");
    test::Symlink("/etc/passwd", t / "state/run/link");
    volume.emplace(Volume::Open(t / "state").value());
    volume->MakeBookkeeping().value();
    test::WriteFile(t / "state/.agent-init/history", "h");
    run = volume->dir().OpenSub("run").value();
  }
  Result<void> HandOverRun(bool force = false) {
    return HandOver(*volume, {&run}, {&run}, kAgent, force, ops);
  }
  bool Chowned(const std::string& rel) const { return ops.Chowned(t / rel, kAgent.uid, kAgent.gid); }
  size_t Count(const std::string& rel) const {
    return static_cast<size_t>(std::count_if(ops.chowns.begin(), ops.chowns.end(),
                                             [&](const auto& c) { return c.path == t / rel; }));
  }
};

TEST(ChownTree, EveryEntrySymlinksThemselvesNotTheirTargets) {
  OwnFixture f;
  auto changed = ChownTree(f.run, kAgent.uid, kAgent.gid, f.ops);
  ASSERT_TRUE(changed) << changed.error().msg;
  EXPECT_EQ(*changed, 5u) << "run, agent.id, comp, comp/registry, link";
  for (const char* rel :
       {"state/run", "state/run/agent.id", "state/run/comp", "state/run/comp/registry", "state/run/link"}) {
    EXPECT_TRUE(f.Chowned(rel)) << rel;
  }
  EXPECT_FALSE(f.ops.Chowned("/etc/passwd", kAgent.uid, kAgent.gid));
}

TEST(ChownTree, AFileWithSeveralHardLinksIsLeftAlone) {
  OwnFixture f;
  ASSERT_EQ(::link((f.t / "state/run/agent.id").c_str(), (f.t / "state/run/agent.id.2").c_str()), 0);
  ASSERT_TRUE(ChownTree(f.run, kAgent.uid, kAgent.gid, f.ops));
  EXPECT_FALSE(f.Chowned("state/run/agent.id"));
  EXPECT_FALSE(f.Chowned("state/run/agent.id.2"));
  EXPECT_TRUE(f.Chowned("state/run/comp/registry"));
}

TEST(ChownTree, WhatTheUserAlreadyOwnsIsNotTouched) {
  OwnFixture f;
  auto changed = ChownTree(f.run, ::getuid(), ::getgid(), f.ops);
  ASSERT_TRUE(changed);
  EXPECT_EQ(*changed, 0u);
  EXPECT_TRUE(f.ops.chowns.empty());
}

TEST(ChownTree, ARefusedChownIs77AndNamesThePath) {
  OwnFixture f;
  f.ops.chown_errno = EPERM;
  auto changed = ChownTree(f.run, kAgent.uid, kAgent.gid, f.ops);
  ASSERT_FALSE(changed);
  EXPECT_EQ(ExitCodeFor(changed.error().kind), 77);
  EXPECT_NE(changed.error().msg.find("chown `" + f.t.path()), std::string::npos) << changed.error().msg;
}

TEST(HandOver, WalksOnceThenOnlyAgentInitsOwnFiles) {
  OwnFixture f;
  ASSERT_TRUE(f.HandOverRun());
  EXPECT_TRUE(f.Chowned("state/run/comp/registry"));
  EXPECT_TRUE(f.Chowned("state/.agent-init")) << "the bookkeeping directory is the user's too";
  EXPECT_TRUE(test::Exists(f.t / "state/.agent-init/chowned")) << "the walk is remembered";

  f.ops.chowns.clear();
  ASSERT_TRUE(f.HandOverRun());
  EXPECT_FALSE(f.Chowned("state/run/comp/registry")) << "a restart does not walk the tree again";
  EXPECT_TRUE(f.Chowned("state/run")) << "the run directory is checked at every start";
  EXPECT_TRUE(f.Chowned("state/.agent-init/history")) << "rewritten as root at every start";
  EXPECT_TRUE(f.Chowned("state/.agent-init/chowned"));
  EXPECT_EQ(f.Count("state/.agent-init/lock"), 0u) << "no lock file here: ENOENT is fine";
}

TEST(HandOver, OtherIdsOrAForcedWalkWalkAgain) {
  OwnFixture f;
  ASSERT_TRUE(f.HandOverRun());
  f.ops.chowns.clear();
  ASSERT_TRUE(HandOver(*f.volume, {&f.run}, {&f.run}, Ids{5000, 5000}, false, f.ops));
  EXPECT_TRUE(f.ops.Chowned(f.t / "state/run/comp/registry", 5000, 5000));

  f.ops.chowns.clear();
  ASSERT_TRUE(HandOver(*f.volume, {&f.run}, {&f.run}, Ids{5000, 5000}, true, f.ops));
  EXPECT_TRUE(f.ops.Chowned(f.t / "state/run/comp/registry", 5000, 5000)) << "forced after a migration";
}

// At every start the run directory is checked, and chowned only when it is
// not the user's (an operator's rm -rf recreated it as root).
TEST(HandOver, TheRunDirectoryIsChownedOnlyWhenItIsNotTheUsers) {
  if (::geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root to give the directory to another user";
  OwnFixture f;
  ASSERT_TRUE(f.HandOverRun());
  ASSERT_EQ(::chown((f.t / "state/run").c_str(), kAgent.uid, kAgent.gid), 0);
  f.ops.chowns.clear();
  ASSERT_TRUE(f.HandOverRun());
  EXPECT_EQ(f.Count("state/run"), 0u) << "already the user's";
  ASSERT_EQ(::chown((f.t / "state/run").c_str(), 0, 0), 0);
  ASSERT_TRUE(f.HandOverRun());
  EXPECT_TRUE(f.Chowned("state/run")) << "root's again: handed over";
}

TEST(HandOver, ARefusedChownIsReportedAsTheHandOver) {
  OwnFixture f;
  f.ops.chown_errno = EPERM;
  auto r = f.HandOverRun();
  ASSERT_FALSE(r);
  EXPECT_EQ(ExitCodeFor(r.error().kind), 77);
  EXPECT_EQ(r.error().msg.rfind("hand the state to --user: chown", 0), 0u) << r.error().msg;
  EXPECT_FALSE(test::Exists(f.t / "state/.agent-init/chowned")) << "not remembered as done";
}

}  // namespace
}  // namespace agent_init
