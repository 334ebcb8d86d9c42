#include "volume/snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <gtest/gtest.h>

#include <optional>

#include "base/sys.h"
#include "base/unique_fd.h"
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

// What a snapshot reports (its log line): files and bytes as copied, the
// volume's filesystem, and whether the data was shared.
TEST(Snapshot, ReportsWhatItCopiedAndOnWhichFilesystem) {
  SnapFixture f;
  test::WriteFile(f.t / "state/run/empty", "");
  auto taken = TakeSnapshot(f.volume(), Layout::kRun, "elastic-agent-aaaaaa", 2);
  ASSERT_TRUE(taken) << taken.error().msg;
  EXPECT_EQ(taken->copy.files, 3u);
  EXPECT_EQ(taken->copy.dirs, 2u);  // run and comp
  EXPECT_EQ(taken->copy.bytes, std::string("A-ID").size() + std::string("offsets").size());
  EXPECT_EQ(taken->copy.data_files, 2u) << "the empty file has nothing to share";
  EXPECT_EQ(taken->filesystem, sys::FilesystemName(f.volume().bookkeeping().fd()));
  EXPECT_NE(taken->filesystem, "unknown");
  // ext4 and tmpfs (where temporary directories are here) share no extents;
  // XFS and btrfs do (tests/ns make those).
  if (taken->filesystem == "ext4" || taken->filesystem == "tmpfs") {
    EXPECT_EQ(taken->copy.reflinked, 0u);
    EXPECT_EQ(ReflinkWord(taken->copy), "no");
  }
  EXPECT_LE(taken->copy.reflinked, taken->copy.data_files);
}

TEST(Snapshot, ReflinkWordSaysHowMuchWasShared) {
  CopyStats c;
  EXPECT_EQ(ReflinkWord(c), "nothing to share");
  c.data_files = 3;
  EXPECT_EQ(ReflinkWord(c), "no");
  c.reflinked = 1;
  EXPECT_EQ(ReflinkWord(c), "partly");
  c.reflinked = 3;
  EXPECT_EQ(ReflinkWord(c), "yes");
}

TEST(FilesystemName, NamesWhatItKnowsAndGivesTheMagicOfTheRest) {
  UniqueFd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(proc.valid());
  EXPECT_EQ(sys::FilesystemName(proc.get()), "0x9fa0");  // PROC_SUPER_MAGIC
  EXPECT_EQ(sys::FilesystemName(-1), "unknown");
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

// The clock stepped back after two snapshots were taken (their directories'
// times are ahead of it now: an NTP correction, a node whose clock was
// ahead). The snapshot taken next is still the newest, and the oldest goes:
// the order is the one recorded, not the directories' times.
TEST(Snapshot, TheOrderTakenSurvivesAClockSteppedBack) {
  SnapFixture f;
  ASSERT_TRUE(TakeSnapshot(f.volume(), Layout::kRun, "a", 2));
  ASSERT_TRUE(TakeSnapshot(f.volume(), Layout::kRun, "b", 2));
  f.Age("a", -7200);  // "taken" two hours ahead of today's clock
  f.Age("b", -3600);
  ASSERT_TRUE(TakeSnapshot(f.volume(), Layout::kRun, "c", 2));
  EXPECT_TRUE(test::Exists(f.t / "state/.agent-init/snapshots/c")) << "the snapshot just taken was pruned";
  EXPECT_FALSE(test::Exists(f.t / "state/.agent-init/snapshots/a")) << "the oldest goes";
  auto list = ListSnapshots(f.volume());
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "c");
  EXPECT_EQ((*list)[1].name, "b");
  // A restore's saved run directory is the newest after it.
  ASSERT_TRUE(RestoreSnapshot(f.volume(), Layout::kRun, "b", "before-restore-x", 2));
  list = ListSnapshots(f.volume());
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "before-restore-x");
  EXPECT_EQ((*list)[1].name, "c");
}

// Snapshots from before the order was recorded rank after the recorded
// ones, by their times; an order that cannot be read falls back to the
// times, and the next snapshot records a fresh one.
TEST(Snapshot, UnrecordedSnapshotsRankByTimeAfterTheRecordedOnes) {
  SnapFixture f;
  test::MakeDirs(f.t / "state/.agent-init/snapshots/old-1");
  test::MakeDirs(f.t / "state/.agent-init/snapshots/old-2");
  f.Age("old-1", 200);
  f.Age("old-2", 100);
  ASSERT_TRUE(TakeSnapshot(f.volume(), Layout::kRun, "new", 5));
  auto list = ListSnapshots(f.volume());
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].name, "new");
  EXPECT_EQ((*list)[1].name, "old-2");
  EXPECT_EQ((*list)[2].name, "old-1");
  test::WriteFile(f.t / "state/.agent-init/snapshots/.order", "garbage");
  list = ListSnapshots(f.volume());
  ASSERT_TRUE(list);
  EXPECT_EQ(list->size(), 3u);
  ASSERT_TRUE(TakeSnapshot(f.volume(), Layout::kRun, "newer", 5));
  list = ListSnapshots(f.volume());
  ASSERT_TRUE(list);
  EXPECT_EQ((*list)[0].name, "newer");
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
