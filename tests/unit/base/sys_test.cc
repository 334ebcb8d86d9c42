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

// /proc is always another filesystem than /.
TEST(SameMount, AnotherFilesystemIsAnotherMountWithOrWithoutMountIds) {
  struct statx root = StatOf("/"), proc = StatOf("/proc");
  EXPECT_TRUE(sys::SameMount(root, StatOf("/")));
  EXPECT_FALSE(sys::SameMount(root, proc));
  // As a kernel before 5.8 or qemu-user reports them: no mount ids.
  root.stx_mask &= ~STATX_MNT_ID;
  proc.stx_mask &= ~STATX_MNT_ID;
  EXPECT_FALSE(sys::SameMount(root, proc));
  EXPECT_TRUE(sys::SameMount(root, StatOf("/")));
}

TEST(SameMount, TheSameDeviceUnderAnotherMountIdIsAnotherMount) {
  struct statx a = StatOf("/");
  a.stx_mask |= STATX_MNT_ID;
  a.stx_mnt_id = 7;
  struct statx b = a;
  b.stx_mnt_id = 8;  // a bind mount of the same filesystem
  EXPECT_FALSE(sys::SameMount(a, b));
}

}  // namespace
}  // namespace agent_init
