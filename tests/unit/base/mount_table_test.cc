#include "base/mount_table.h"

#include <gtest/gtest.h>

namespace agent_init {
namespace {

// What a Kubernetes container sees: overlay root, a noexec hostPath volume
// at STATE, and a tmpfs.
constexpr const char* kContainer =
    "600 500 0:52 / / rw,relatime master:1 - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n"
    "601 600 0:53 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "602 600 8:1 /var/lib/elastic-agent/state /usr/share/elastic-agent/state rw,nosuid,nodev,noexec,relatime "
    "- ext4 /dev/sda1 rw\n"
    "603 600 0:54 / /dev/shm rw,nosuid,nodev - tmpfs shm rw,size=65536k\n"
    "604 600 0:55 / /usr/share/elastic-agent/data/elastic-agent-9b2fec/run rw,nosuid,nodev,noexec,relatime - "
    "ext4 /dev/sda1 rw\n"
    "605 604 0:55 / /usr/share/elastic-agent/data/elastic-agent-9b2fec/run ro,relatime - ext4 /dev/sda1 rw\n";

TEST(MountTable, ParsesMountinfoText) {
  auto t = MountTable::Parse(kContainer);
  ASSERT_TRUE(t) << t.error().msg;
  ASSERT_EQ(t->mounts().size(), 6u);
  const Mount* state = t->ById(602);
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(state->target, "/usr/share/elastic-agent/state");
  EXPECT_EQ(state->root, "/var/lib/elastic-agent/state");
  EXPECT_EQ(state->fstype, "ext4");
  EXPECT_TRUE(state->noexec);
  EXPECT_FALSE(state->readonly);
  EXPECT_EQ(state->parent_id, 600u);
}

// libmount's "noexec" match means "has no exec" and is true for almost every
// mount (../shared/notes/containers.md); the flag must be read exactly.
TEST(MountTable, NoexecIsTheFlagNotTheAbsenceOfExec) {
  auto t = MountTable::Parse(kContainer);
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->ById(600)->noexec);
  EXPECT_FALSE(t->ById(603)->noexec);
  EXPECT_TRUE(t->ById(601)->noexec);
  EXPECT_TRUE(t->ById(605)->readonly);
}

TEST(MountTable, CoveringUsesTheLastLongestMount) {
  auto t = MountTable::Parse(kContainer);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Covering("/usr/share/elastic-agent/state/run")->id, 602u);
  EXPECT_EQ(t->Covering("/usr/share/elastic-agent/statex")->id, 600u);
  EXPECT_EQ(t->Covering("/usr/share/elastic-agent/data/elastic-agent-9b2fec/run/x")->id, 605u);
  EXPECT_EQ(t->Covering("/")->id, 600u);
}

TEST(MountTable, CountsStackedMounts) {
  auto t = MountTable::Parse(kContainer);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->CountAt("/usr/share/elastic-agent/data/elastic-agent-9b2fec/run"), 2u);
  EXPECT_EQ(t->CountAt("/usr/share/elastic-agent/state"), 1u);
  EXPECT_EQ(t->CountAt("/nowhere"), 0u);
}

TEST(MountTable, ReadsOwnMountTable) {
  auto t = MountTable::Read();
  ASSERT_TRUE(t) << t.error().msg;
  EXPECT_FALSE(t->mounts().empty());
  EXPECT_NE(t->Covering("/"), nullptr);
}

}  // namespace
}  // namespace agent_init
