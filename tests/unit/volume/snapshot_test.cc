#include "volume/snapshot.h"

#include <sys/stat.h>
#include <sys/time.h>

#include <gtest/gtest.h>

#include <optional>

#include "temp_dir.h"

namespace agent_init {
namespace {

struct SnapFixture {
  test::TempDir t;
  std::optional<Volume> opened;
  Volume& volume() { return *opened; }
  SnapFixture() {
    test::WriteFile(t / "state/run/agent.id", "A-ID");
    test::WriteFile(t / "state/run/comp/registry", "offsets");
    test::MakeDirs(t / "state/.agent-init");
    opened.emplace(Volume::Open(t / "state").value());
    EXPECT_TRUE(opened->OpenBookkeeping().value());
  }
  void Age(const std::string& name, int seconds_ago) {
    struct timeval tv[2];
    ::gettimeofday(&tv[0], nullptr);
    tv[0].tv_sec -= seconds_ago;
    tv[1] = tv[0];
    ::utimes((t / "state/.agent-init/snapshots/" + name).c_str(), tv);
  }
};

TEST(Snapshot, CopiesRunWithoutTouchingIt) {
  SnapFixture f;
  std::string before = test::TreeDigest(f.t / "state/run");
  ASSERT_TRUE(TakeSnapshot(f.volume(), Layout::kRun, "elastic-agent-aaaaaa", 2));
  EXPECT_EQ(test::TreeDigest(f.t / "state/run"), before);
  EXPECT_EQ(test::TreeDigest(f.t / "state/.agent-init/snapshots/elastic-agent-aaaaaa"), before);
  EXPECT_FALSE(test::Exists(f.t / "state/.agent-init/journal"));
  EXPECT_FALSE(test::Exists(f.t / "state/.agent-init/snapshots/.partial"));
}

TEST(Snapshot, ReplacesASnapshotOfTheSameNameAndPrunesToKeep) {
  SnapFixture f;
  ASSERT_TRUE(TakeSnapshot(f.volume(), Layout::kRun, "a", 2));
  f.Age("a", 300);
  ASSERT_TRUE(TakeSnapshot(f.volume(), Layout::kRun, "b", 2));
  f.Age("b", 200);
  test::WriteFile(f.t / "state/run/agent.id", "NEW");
  ASSERT_TRUE(TakeSnapshot(f.volume(), Layout::kRun, "a", 2));
  EXPECT_EQ(test::ReadFile(f.t / "state/.agent-init/snapshots/a/agent.id"), "NEW");
  ASSERT_TRUE(TakeSnapshot(f.volume(), Layout::kRun, "c", 2));
  auto list = ListSnapshots(f.volume());
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_FALSE(test::Exists(f.t / "state/.agent-init/snapshots/b")) << "the oldest goes";
  EXPECT_FALSE(test::Exists(f.t / "state/.agent-init/snapshots/.old"));
}

TEST(Snapshot, RestorePutsItBackAndKeepsTheCurrentRun) {
  SnapFixture f;
  ASSERT_TRUE(TakeSnapshot(f.volume(), Layout::kRun, "elastic-agent-aaaaaa", 3));
  test::WriteFile(f.t / "state/run/agent.id", "B-ID");
  ASSERT_TRUE(RestoreSnapshot(f.volume(), Layout::kRun, "elastic-agent-aaaaaa", "before-restore-x", 3));
  EXPECT_EQ(test::ReadFile(f.t / "state/run/agent.id"), "A-ID");
  EXPECT_EQ(test::ReadFile(f.t / "state/.agent-init/snapshots/before-restore-x/agent.id"), "B-ID");
  EXPECT_TRUE(test::Exists(f.t / "state/.agent-init/snapshots/elastic-agent-aaaaaa/agent.id"));
}

TEST(Snapshot, RestoreOfAMissingSnapshotListsThePresentOnes) {
  SnapFixture f;
  ASSERT_TRUE(TakeSnapshot(f.volume(), Layout::kRun, "elastic-agent-aaaaaa", 2));
  auto r = RestoreSnapshot(f.volume(), Layout::kRun, "nope", "x", 2);
  ASSERT_FALSE(r);
  EXPECT_EQ(ExitCodeFor(r.error().kind), 64);
  EXPECT_NE(r.error().hint.find("elastic-agent-aaaaaa"), std::string::npos);
}

TEST(Snapshot, ASymlinkedSnapshotsDirectoryIsRefused) {
  SnapFixture f;
  test::MakeDirs(f.t / "outside");
  test::Symlink(f.t / "outside", f.t / "state/.agent-init/snapshots");
  auto r = TakeSnapshot(f.volume(), Layout::kRun, "a", 2);
  ASSERT_FALSE(r);
  EXPECT_EQ(ExitCodeFor(r.error().kind), 77);
  EXPECT_EQ(test::TreeDigest(f.t / "outside"), "");
}

TEST(Snapshot, NamesWithNewlinesAndInvalidUtf8SurviveTheCopy) {
  SnapFixture f;
  test::WriteFile(f.t / "state/run/line\nbreak", "1");
  test::WriteFile(f.t / "state/run/bad\xff\xfe", "2");
  ASSERT_TRUE(TakeSnapshot(f.volume(), Layout::kRun, "a", 2));
  EXPECT_EQ(test::ReadFile(f.t / "state/.agent-init/snapshots/a/line\nbreak"), "1");
  EXPECT_EQ(test::ReadFile(f.t / "state/.agent-init/snapshots/a/bad\xff\xfe"), "2");
}

}  // namespace
}  // namespace agent_init
