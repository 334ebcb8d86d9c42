#include "base/sys.h"

#include <fcntl.h>
#include <gtest/gtest.h>

namespace agent_init {
namespace {

struct statx StatOf(const char* path) {
  struct statx st {};
  EXPECT_EQ(sys::Statx(AT_FDCWD, path, 0, &st), 0) << path;
  return st;
}

struct statx WithMountId(struct statx st, std::uint64_t id) {
  st.stx_mask |= STATX_MNT_ID;
  st.stx_mnt_id = id;
  return st;
}

// /proc is always another filesystem than /.
TEST(SameMount, WithoutMountIdsTheDeviceTellsFilesystemsApart) {
  struct statx root = StatOf("/"), proc = StatOf("/proc");
  EXPECT_TRUE(sys::SameMount(root, StatOf("/")));
  EXPECT_FALSE(sys::SameMount(root, proc));
  // As a kernel before 5.8 reports them (no mount id), and as qemu-user
  // does (the bit set, the id 0).
  for (auto strip : {+[](struct statx st) {
                       st.stx_mask &= ~STATX_MNT_ID;
                       return st;
                     },
                     +[](struct statx st) { return WithMountId(st, 0); }}) {
    EXPECT_FALSE(sys::HasMountId(strip(root)));
    EXPECT_FALSE(sys::SameMount(strip(root), strip(proc)));
    EXPECT_TRUE(sys::SameMount(strip(root), strip(StatOf("/"))));
  }
}

TEST(SameMount, WithMountIdsTheIdDecides) {
  struct statx a = WithMountId(StatOf("/"), 7);
  EXPECT_FALSE(sys::SameMount(a, WithMountId(a, 8)));  // a bind mount of the same filesystem
  struct statx subvolume = a;                          // a btrfs subvolume: its own device, one mount
  subvolume.stx_dev_minor += 1;
  EXPECT_TRUE(sys::SameMount(a, subvolume));
}

}  // namespace
}  // namespace agent_init
