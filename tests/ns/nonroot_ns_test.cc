// agent-init started as a non-root user, as the official image's USER and
// OpenShift's arbitrary uids start it: it works where the permissions allow
// it (symlink method, no chown), and otherwise refuses with 77, naming the
// ids, the owner and mode it found and the fix, and changing nothing in the
// image or in the agent's state. Needs root to lay out the fixtures and
// switch users.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "base/error.h"
#include "binary.h"
#include "home_fixture.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

using test::Contains;
using test::RunAsUser;
using test::RunResult;

using test::kVh;
const RunAsUser kAgent{1000, 1000, {1000}};
const RunAsUser kAgentInGroup0{1000, 1000, {1000, 0}};
const RunAsUser kOpenShift{1000570000, 0, {0}};

class NonRootNs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root to switch to the agent's user";
    ::chmod(t_.path().c_str(), 0755);
    test::Make711Home(t_ / "home");
    test::WriteFile(t_ / kVh + "/run/agent.id", "from-the-image");
    test::MakeDirs(t_ / "state", 0755);
  }
  // The home as Elastic's images up to 8.11 have it: root:root, directories
  // 0770, files 0660 (executables 0770); from 8.12 owned by 1000, 0777.
  void Home811() { Own("home", 0, 0, 0770, 0660, 0770); }
  void Home812() { Own("home", 1000, 1000, 0777, 0666, 0755); }
  void Own(const std::string& rel, uid_t uid, gid_t gid, mode_t dirs, mode_t files, mode_t exes) {
    std::string cmd = "cd '" + t_ / rel + "' && chown -R -h " + std::to_string(uid) + ":" +
                      std::to_string(gid) + " . && find . -type d -exec chmod " + Octal(dirs) +
                      " {} + && find . -type f -perm -u+x -exec chmod " + Octal(exes) +
                      " {} + && find . -type f ! -perm -u+x -exec chmod " + Octal(files) + " {} +";
    ASSERT_EQ(test::Shell(cmd), 0) << cmd;
  }
  static std::string Octal(mode_t m) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%o", static_cast<unsigned>(m));
    return buf;
  }
  void State(uid_t uid, gid_t gid, mode_t mode) {
    ASSERT_EQ(::chown((t_ / "state").c_str(), uid, gid), 0);
    ASSERT_EQ(::chmod((t_ / "state").c_str(), mode), 0);
  }
  RunResult Start(const RunAsUser& as) {
    return test::AgentInitAs(as, {"--home", t_ / "home", "--state", t_ / "state", "prepare"});
  }
  // What a refused start must leave as it was.
  std::string Digests() { return test::TreeDigest(t_ / "home") + "|" + test::TreeDigest(t_ / "state/run"); }
  test::TempDir t_;
};

TEST_F(NonRootNs, OwnVolumeAndAn812HomeWorkWithoutPrivilege) {
  Home812();
  State(1000, 1000, 0755);
  RunResult r = Start(kAgent);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Contains(r.err, "method=symlink")) << r.err;
  EXPECT_TRUE(test::IsSymlink(t_ / kVh + "/run"));
  EXPECT_EQ(test::ReadFile(t_ / "state/run/agent.id"), "from-the-image") << "migrated as 1000";
}

TEST_F(NonRootNs, Group0WritesThe811HomeAndVolume) {
  Home811();
  State(0, 0, 0770);
  RunResult r = Start(kAgentInGroup0);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(test::IsSymlink(t_ / kVh + "/run"));
}

TEST_F(NonRootNs, AnArbitraryUidWithGid0Works) {
  Home811();
  State(0, 0, 0770);
  RunResult r = Start(kOpenShift);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(test::ReadFile(t_ / "state/run/agent.id"), "from-the-image");
}

// The hostPath that DirectoryOrCreate makes: root:root 0755.
TEST_F(NonRootNs, ARootOwnedVolumeIs77WithTheFixAndNothingChanges) {
  Home812();
  State(0, 0, 0755);
  std::string before = Digests();
  RunResult r = Start(kAgent);
  EXPECT_EQ(r.status, 77) << r.err;
  EXPECT_TRUE(Contains(r.err, "agent-init runs as uid 1000, gid 1000, groups 1000")) << r.err;
  EXPECT_TRUE(Contains(r.err, Q(t_ / "state") + " is owned by 0:0, mode 0755")) << r.err;
  EXPECT_TRUE(Contains(r.err, "agent-init prepare --user 1000:1000")) << r.err;
  EXPECT_TRUE(Contains(r.err, "chown the node directory to 1000:1000")) << r.err;
  EXPECT_EQ(Digests(), before);
  EXPECT_FALSE(test::Exists(t_ / "state/.agent-init"));
}

// A volume an earlier start prepared as root without --user.
TEST_F(NonRootNs, RootsBookkeepingOnTheUsersVolumeIs77AndNamesIt) {
  Home812();
  State(1000, 1000, 0755);
  test::MakeDirs(t_ / "state/.agent-init", 0700);
  std::string before = Digests() + test::TreeDigest(t_ / "state");
  RunResult r = Start(kAgent);
  EXPECT_EQ(r.status, 77) << r.err;
  EXPECT_TRUE(Contains(r.err, Q(t_ / "state/.agent-init") + " is owned by 0:0, mode 0700")) << r.err;
  EXPECT_TRUE(Contains(r.err, "agent-init prepare --user 1000:1000")) << r.err;
  EXPECT_EQ(Digests() + test::TreeDigest(t_ / "state"), before);
}

// An 8.11 home for a user without group 0 (a wolfi-style user).
TEST_F(NonRootNs, An811HomeWithoutGroup0Is77WithTheFixAndNothingChanges) {
  Home811();
  State(1000, 1000, 0755);
  std::string before = Digests();
  RunResult r = Start(kAgent);
  EXPECT_EQ(r.status, 77) << r.err;
  EXPECT_TRUE(Contains(r.err, Q(t_ / "home") + " is owned by 0:0, mode 0770")) << r.err;
  EXPECT_TRUE(Contains(r.err, "group 0")) << r.err;
  EXPECT_TRUE(Contains(r.err, "give agent-init `--user 1000:1000`")) << r.err;
  EXPECT_EQ(Digests(), before);
  EXPECT_FALSE(test::Exists(t_ / "state/.agent-init"));
}

// The home readable but not writable (root:root 0755): the image's state in
// VH/run cannot be moved nor VH/run replaced. Refused before anything
// moves: no journal, the image's state where it was.
TEST_F(NonRootNs, AHomeTheUserCannotWriteIs77BeforeAnythingMoves) {
  Own("home", 0, 0, 0755, 0644, 0755);
  State(1000, 1000, 0755);
  std::string before = Digests();
  RunResult r = Start(kAgent);
  EXPECT_EQ(r.status, 77) << r.err;
  EXPECT_TRUE(Contains(r.err, "with a symlink to")) << r.err;
  EXPECT_TRUE(Contains(r.err, Q(t_ / kVh) + " is owned by 0:0, mode 0755")) << r.err;
  EXPECT_TRUE(Contains(r.err, "run this container as root")) << r.err;
  EXPECT_EQ(Digests(), before);
  EXPECT_FALSE(test::Exists(t_ / "state/.agent-init/journal")) << "no change was started";
}

// agent-init is an entrypoint, not a privilege broker: a setuid copy
// started by a user refuses to run (the kernel's AT_SECURE).
TEST_F(NonRootNs, ASetuidCopyRefusesToRun) {
  std::string copy = t_ / "agent-init-setuid";
  ASSERT_EQ(test::Shell("cp '" + test::AgentInitBinary() + "' '" + copy + "' && chmod 4755 '" + copy + "'"),
            0);
  RunResult r = test::RunAs(kAgent, {copy, "--home", t_ / "home", "--state", t_ / "state", "prepare"});
  EXPECT_EQ(r.status, 77) << r.err;
  EXPECT_TRUE(Contains(r.err, "started setuid or setgid; refusing to run")) << r.err;
  EXPECT_FALSE(test::Exists(t_ / "state/.agent-init"));
}

}  // namespace
}  // namespace agent_init
