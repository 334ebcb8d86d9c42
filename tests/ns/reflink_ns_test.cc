// Snapshots on the filesystems that share extents (XFS with reflink=1,
// btrfs): each made by the test in a sparse image file, loop-mounted in a
// private mount namespace. The snapshot's data is shared with the state, not
// copied: FICLONE for every file, and FIEMAP marks the extents shared.
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "base/sys.h"
#include "base/unique_fd.h"
#include "namespace.h"
#include "temp_dir.h"
#include "volume/snapshot.h"

namespace agent_init {
namespace {

using test::InMountNamespace;

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

INSTANTIATE_TEST_SUITE_P(Filesystems, ReflinkNs,
                         ::testing::Values(Filesystem{"xfs", "mkfs.xfs -q -m reflink=1", "300M"},
                                           Filesystem{"btrfs", "mkfs.btrfs -q", "256M"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace agent_init
