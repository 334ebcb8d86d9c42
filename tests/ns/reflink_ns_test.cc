// Snapshots on the filesystems that share extents (XFS with reflink=1,
// btrfs): each made by the test in a sparse image file, loop-mounted in a
// private mount namespace. The snapshot's data is shared with the state, not
// copied: FICLONE for every file, and FIEMAP marks the extents shared. On
// btrfs the run directory becomes a subvolume, whose snapshots walk no file.
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "base/sys.h"
#include "base/unique_fd.h"
#include "binary.h"
#include "home_fixture.h"
#include "namespace.h"
#include "temp_dir.h"
#include "volume/migrate.h"
#include "volume/snapshot.h"

namespace agent_init {
namespace {

using test::InMountNamespace;
using test::RunResult;

struct Filesystem {
  const char* name;  // as sys::FilesystemName gives it
  const char* mkfs;  // the command, given the image's path
  const char* size;  // the smallest image mkfs accepts, rounded up
};

class ReflinkNs : public ::testing::TestWithParam<Filesystem> {
 protected:
  void SetUp() override {
    REQUIRE_MOUNT_NAMESPACE();
    std::string tool = std::string(GetParam().mkfs).substr(0, std::string(GetParam().mkfs).find(' '));
    if (std::system(("command -v " + tool + " >/dev/null").c_str()) != 0) {
      GTEST_SKIP() << "SKIPPED: no " << tool << " (scripts/setup test installs xfsprogs and btrfs-progs)";
    }
  }
  test::TempDir t_;
};

// Every extent of the file at `path` is marked shared.
std::string AllExtentsShared(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return "open " + path + ": " + std::strerror(errno);
  std::vector<char> buf(sizeof(struct fiemap) + 256 * sizeof(struct fiemap_extent));
  auto* map = reinterpret_cast<struct fiemap*>(buf.data());
  map->fm_length = FIEMAP_MAX_OFFSET;
  map->fm_flags = FIEMAP_FLAG_SYNC;
  map->fm_extent_count = 256;
  if (::ioctl(fd.get(), FS_IOC_FIEMAP, map) < 0) return std::string("FIEMAP: ") + std::strerror(errno);
  if (map->fm_mapped_extents == 0) return path + " has no extents";
  for (unsigned i = 0; i < map->fm_mapped_extents; ++i) {
    if (!(map->fm_extents[i].fe_flags & FIEMAP_EXTENT_SHARED)) {
      return path + ": extent " + std::to_string(i) + " is not shared";
    }
  }
  return "";
}

TEST_P(ReflinkNs, ASnapshotSharesTheStatesExtents) {
  const Filesystem& fs = GetParam();
  std::string image = t_ / "volume.img", mnt = t_ / "volume";
  test::MakeDirs(mnt);
  int made = std::system(("truncate -s " + std::string(fs.size) + " " + image + " && " + fs.mkfs + " " +
                          image + " >/dev/null 2>&1")
                             .c_str());
  ASSERT_EQ(made, 0) << fs.mkfs << " " << image;
  std::string failure = InMountNamespace([&]() -> std::string {
    NS_CHECK(std::system(("mount -o loop " + image + " " + mnt).c_str()) == 0, "mount -o loop " + image);
    std::string state = mnt + "/state";
    test::WriteFile(state + "/run/agent.id", "A-ID");
    // 8 MiB of data in 64 files and one large file, as component state is.
    std::string chunk(128 << 10, 'x');
    for (int i = 0; i < 64; ++i) {
      chunk[0] = static_cast<char>('a' + i % 26);
      test::WriteFile(state + "/run/comp/f" + std::to_string(i), chunk);
    }
    test::WriteFile(state + "/run/queue.db", std::string(8 << 20, 'q'));
    test::MakeDirs(state + "/.agent-init");
    auto volume = Volume::Open(state);
    NS_CHECK(volume, "open the volume");
    NS_CHECK(volume->OpenBookkeeping(), "bookkeeping");
    auto taken = TakeSnapshot(*volume, Layout::kRun, "elastic-agent-aaaaaa", 2);
    NS_CHECK(taken, "snapshot: " + taken.error().msg);
    NS_CHECK(taken->filesystem == fs.name, "filesystem " + taken->filesystem);
    NS_CHECK(taken->copy.data_files == 66 && taken->copy.reflinked == 66,
             "reflinked " + std::to_string(taken->copy.reflinked) + " of " +
                 std::to_string(taken->copy.data_files));
    NS_CHECK(ReflinkWord(taken->copy) == "yes", std::string(ReflinkWord(taken->copy)));
    std::string snap = state + "/.agent-init/snapshots/elastic-agent-aaaaaa";
    NS_CHECK(test::ReadFile(snap + "/agent.id") == "A-ID", "the snapshot's content");
    if (auto shared = AllExtentsShared(snap + "/queue.db"); !shared.empty()) return shared;
    if (auto shared = AllExtentsShared(snap + "/comp/f7"); !shared.empty()) return shared;
    return "";
  });
  EXPECT_EQ(failure, "");
}

// A btrfs image, loop-mounted (in the namespace the test body runs in) at
// `mnt`, with the volume at mnt/state.
class BtrfsNs : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_MOUNT_NAMESPACE();
    REQUIRE_MKFS_BTRFS();
    ASSERT_FALSE(test::MakeBtrfsImage(Image()).empty()) << "mkfs.btrfs " << Image();
    test::MakeDirs(Mnt());
  }
  std::string Image() { return t_ / "volume.img"; }
  std::string Mnt() { return t_ / "volume"; }
  std::string S() { return Mnt() + "/state"; }
  // In the namespace: mounts the image; "" or what failed.
  std::string Mount() {
    if (std::system(("mount -o loop " + Image() + " " + Mnt()).c_str()) != 0)
      return "mount -o loop " + Image();
    test::MakeDirs(S() + "/.agent-init");
    return "";
  }
  test::TempDir t_;
};

// The state of a run directory as the agent leaves it.
void WriteState(const std::string& run, const std::string& id) {
  test::WriteFile(run + "/agent.id", id);
  test::WriteFile(run + "/comp/registry", "offsets-" + id);
  test::WriteFile(run + "/queue.db", std::string(1 << 20, 'q'));
  test::Symlink("comp", run + "/link");
  ::mkfifo((run + "/fifo").c_str(), 0600);
}

// The upgrade from A to B makes STATE/run a subvolume (one copy, as before);
// from then on a snapshot is a subvolume snapshot: no file walked, every
// extent shared, and restore and prune work on it.
TEST_F(BtrfsNs, TheRunDirectoryBecomesASubvolumeAndLaterSnapshotsWalkNoFile) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = Mount(); !e.empty()) return e;
    WriteState(S() + "/run", "A");
    ::chmod((S() + "/run").c_str(), 0750);
    const std::string a_state = test::TreeDigest(S() + "/run");
    auto volume = Volume::Open(S());
    NS_CHECK(volume && volume->OpenBookkeeping(), "open the volume");
    auto first = TakeSnapshot(*volume, Layout::kRun, "elastic-agent-aaaaaa", 2, /*subvolume_run=*/true);
    NS_CHECK(first, "first snapshot: " + first.error().msg);
    NS_CHECK(!first->copy.subvolume && first->copy.files == 4,
             "the first snapshot copies the files and the FIFO");
    NS_CHECK(test::IsBtrfsSubvolume(S() + "/run"), "STATE/run is a subvolume after the first snapshot");
    struct stat st;
    NS_CHECK(::stat((S() + "/run").c_str(), &st) == 0 && (st.st_mode & 07777) == 0750,
             "the run directory keeps its mode");
    std::string snaps = S() + "/.agent-init/snapshots/";
    NS_CHECK(test::TreeDigest(S() + "/run") == a_state, "the run directory holds A's state");
    NS_CHECK(test::TreeDigest(snaps + "elastic-agent-aaaaaa") == a_state, "the snapshot holds A's state");

    WriteState(S() + "/run/b", "B");
    const std::string b_state = test::TreeDigest(S() + "/run");
    auto second = TakeSnapshot(*volume, Layout::kRun, "elastic-agent-bbbbbb", 2, true);
    NS_CHECK(second, "second snapshot: " + second.error().msg);
    NS_CHECK(second->copy.subvolume && second->copy.files == 0, "a subvolume snapshot walks no file");
    NS_CHECK(ReflinkWord(second->copy) == "yes", std::string(ReflinkWord(second->copy)));
    NS_CHECK(test::IsBtrfsSubvolume(snaps + "elastic-agent-bbbbbb"), "the snapshot is a subvolume");
    NS_CHECK(test::TreeDigest(snaps + "elastic-agent-bbbbbb") == b_state, "the snapshot holds B's state");
    if (auto shared = AllExtentsShared(snaps + "elastic-agent-bbbbbb/queue.db"); !shared.empty())
      return shared;
    // Later writes to the state do not reach the snapshot.
    test::WriteFile(S() + "/run/agent.id", "C");
    NS_CHECK(test::ReadFile(snaps + "elastic-agent-bbbbbb/agent.id") == "A", "the snapshot is its own");

    auto restored = RestoreSnapshot(*volume, Layout::kRun, "elastic-agent-bbbbbb", "before-restore", 3);
    NS_CHECK(restored, "restore: " + restored.error().msg);
    NS_CHECK(test::TreeDigest(S() + "/run") == b_state, "restore put B's state back");
    NS_CHECK(test::IsBtrfsSubvolume(S() + "/run"), "the restored run directory is a subvolume");
    NS_CHECK(test::IsBtrfsSubvolume(snaps + "before-restore"),
             "the state before the restore is kept as it was");
    // keep 1: the other snapshots are pruned, subvolumes or not.
    auto third = TakeSnapshot(*volume, Layout::kRun, "elastic-agent-cccccc", 1, true);
    NS_CHECK(third && third->copy.subvolume, "third snapshot");
    auto list = ListSnapshots(*volume);
    NS_CHECK(list && list->size() == 1 && (*list)[0].name == "elastic-agent-cccccc", "pruned to the newest");
    NS_CHECK(!test::Exists(snaps + "elastic-agent-bbbbbb") && !test::Exists(snaps + "before-restore"),
             "the pruned subvolumes are gone");
    return "";
  });
  EXPECT_EQ(failure, "");
}

// A subvolume in the run directory would be an empty directory in a
// snapshot of it: such a run directory is copied, and nothing is missing.
TEST_F(BtrfsNs, ARunDirectoryWithNestedSubvolumesIsCopied) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = Mount(); !e.empty()) return e;
    NS_CHECK(
        test::Shell("btrfs -q subvolume create " + S() + "/run >/dev/null && btrfs -q subvolume create " +
                    S() + "/run/nested >/dev/null") == 0,
        "btrfs subvolume create");
    WriteState(S() + "/run", "A");
    test::WriteFile(S() + "/run/nested/inside", "kept");
    auto volume = Volume::Open(S());
    NS_CHECK(volume && volume->OpenBookkeeping(), "open the volume");
    auto taken = TakeSnapshot(*volume, Layout::kRun, "elastic-agent-aaaaaa", 2, true);
    NS_CHECK(taken, "snapshot: " + taken.error().msg);
    NS_CHECK(!taken->copy.subvolume, "copied, not snapshotted");
    std::string snap = S() + "/.agent-init/snapshots/elastic-agent-aaaaaa";
    NS_CHECK(test::ReadFile(snap + "/nested/inside") == "kept",
             "the nested subvolume's file is in the snapshot");
    return "";
  });
  EXPECT_EQ(failure, "");
}

// Migration into a run directory that is a subvolume: rename refuses to
// move files into another subvolume (EXDEV), so they are copied there; the
// image's run directory ends up empty and nothing is lost.
TEST_F(BtrfsNs, MigrationIntoASubvolumeRunDirectoryCopiesAcross) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = Mount(); !e.empty()) return e;
    NS_CHECK(test::Shell("btrfs -q subvolume create " + S() + "/run >/dev/null") == 0,
             "btrfs subvolume create");
    test::WriteFile(S() + "/run/deep/a/kept", "volume");
    WriteState(Mnt() + "/image-run", "image");
    test::WriteFile(Mnt() + "/image-run/deep/a/b/new", "image");
    ::chmod((Mnt() + "/image-run/deep/a/b").c_str(), 0710);
    std::string expected_new = test::TreeDigest(Mnt() + "/image-run/deep/a/b");
    auto volume = Volume::Open(S());
    NS_CHECK(volume && volume->OpenBookkeeping(), "open the volume");
    auto image_run = Dir::OpenTrusted(Mnt() + "/image-run", Kind::kCannotPlace);
    auto state_run = volume->dir().OpenSub("run");
    NS_CHECK(image_run && state_run, "open the run directories");
    auto migrated = MigrateRun(*image_run, *state_run, *volume, "elastic-agent-aaaaaa", {}, nullptr);
    NS_CHECK(migrated, "migrate: " + migrated.error().msg);
    NS_CHECK(migrated->conflicts.empty(), "no conflicts");
    std::string run = S() + "/run";
    NS_CHECK(test::ReadFile(run + "/agent.id") == "image" &&
                 test::ReadFile(run + "/comp/registry") == "offsets-image",
             "the files are in STATE/run");
    NS_CHECK(test::ReadFile(run + "/queue.db") == std::string(1 << 20, 'q'), "the large file is whole");
    NS_CHECK(test::IsSymlink(run + "/link"), "the symlink is in STATE/run");
    struct stat st;
    NS_CHECK(::lstat((run + "/fifo").c_str(), &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO is in STATE/run");
    NS_CHECK(test::TreeDigest(run + "/deep/a/b") == expected_new, "the new directory, with its mode");
    NS_CHECK(test::ReadFile(run + "/deep/a/kept") == "volume", "the volume's own state is kept");
    NS_CHECK(test::TreeDigest(Mnt() + "/image-run").find('/') == std::string::npos,
             "the image's run directory is empty: " + test::TreeDigest(Mnt() + "/image-run"));
    NS_CHECK(!test::Exists(S() + "/.agent-init/migrate"), "the work area is gone");
    return "";
  });
  EXPECT_EQ(failure, "");
}

// As the agent's own user, whose volume it is: the subvolume is made,
// snapshotted and pruned without privileges (an emptied subvolume is removed
// with rmdir).
TEST_F(BtrfsNs, SubvolumeSnapshotsWorkForTheAgentsUser) {
  test::MakeImages(t_.path(), {"elastic-agent-aaaaaa", "elastic-agent-bbbbbb", "elastic-agent-cccccc"});
  // The images are the agent user's, as the official image's home is.
  ASSERT_EQ(test::Shell("chmod a+rx " + t_.path() + " && chown -R 1000:1000 " + t_ / "image-*"), 0);
  const test::RunAsUser agent{1000, 1000, {1000}};
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = Mount(); !e.empty()) return e;
    NS_CHECK(test::Shell("rm -rf " + S() + " && mkdir " + S() + " && chown 1000:1000 " + S()) == 0, "chown");
    auto start = [&](const char* vh) {
      return test::AgentInitAs(agent, {"--home", t_ / std::string("image-") + vh, "--state", S(), "--method",
                                       "symlink", "--keep-snapshots", "1", "--log-level", "info", "prepare"});
    };
    RunResult a = start("elastic-agent-aaaaaa");
    NS_CHECK(a.status == 0, "start A: " + a.err);
    // The agent's state, as the agent (uid 1000) leaves it.
    test::WriteFile(S() + "/run/agent.id", "A\n");
    NS_CHECK(::chown((S() + "/run/agent.id").c_str(), 1000, 1000) == 0, "chown A's state");
    RunResult b = start("elastic-agent-bbbbbb");
    NS_CHECK(b.status == 0, "start B: " + b.err);
    NS_CHECK(test::IsBtrfsSubvolume(S() + "/run"), "STATE/run is a subvolume");
    RunResult c = start("elastic-agent-cccccc");
    NS_CHECK(c.status == 0, "start C: " + c.err);
    NS_CHECK(test::Contains(c.err, "method=\"subvolume snapshot\""), "C's snapshot line: " + c.err);
    std::string snaps = S() + "/.agent-init/snapshots/";
    NS_CHECK(test::IsBtrfsSubvolume(snaps + "elastic-agent-bbbbbb"), "B's snapshot is a subvolume");
    NS_CHECK(test::ReadFile(snaps + "elastic-agent-bbbbbb/agent.id") == "A\n",
             "B's snapshot holds the state");
    NS_CHECK(!test::Exists(snaps + "elastic-agent-aaaaaa"), "A's snapshot pruned (keep 1)");
    return "";
  });
  EXPECT_EQ(failure, "");
}

INSTANTIATE_TEST_SUITE_P(Filesystems, ReflinkNs,
                         ::testing::Values(Filesystem{"xfs", "mkfs.xfs -q -m reflink=1", "300M"},
                                           Filesystem{"btrfs", "mkfs.btrfs -q", "256M"}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace agent_init
