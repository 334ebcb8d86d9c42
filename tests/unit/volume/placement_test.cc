// Placement logic without root: the mount calls go to a fake that refuses
// or "allows" them as each case needs (the real mounts are in tests/ns).
#include "volume/placement.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>

#include <optional>

#include <gtest/gtest.h>

#include "base/exit_codes.h"
#include "fake_privileged.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

struct PlaceFixture {
  test::TempDir t;
  test::FakePrivileged ops;
  std::optional<Volume> volume;
  Dir vh;
  Dir state_run;

  PlaceFixture() {
    test::MakeDirs(t / "home/data/elastic-agent-aaaaaa/run");
    test::MakeDirs(t / "state");
  }
  // value() throws (a test failure) when a step fails.
  void Open() {
    vh = Dir::OpenTrusted(t / "home/data/elastic-agent-aaaaaa").value();
    volume.emplace(Volume::Open(t / "state").value());
    volume->MakeBookkeeping().value();
    state_run = volume->MakeRun(Layout::kRun).value();
  }
  // What the kernel calls STATE/run and VH/run (the fds' paths): the real
  // directory they are in, and their own name (VH/run may be a symlink now).
  std::string Real(const std::string& rel) const {
    char buf[PATH_MAX];
    std::string path = t / rel;
    size_t slash = path.rfind('/');
    return ::realpath(path.substr(0, slash).c_str(), buf) ? std::string(buf) + path.substr(slash)
                                                          : std::string();
  }
  Result<PlaceOutcome> Place(Method method) { return PlaceRun(method, vh, state_run, *volume, "ID", ops); }
  std::string Run() const { return t / "home/data/elastic-agent-aaaaaa/run"; }
};

// Seccomp profiles answer the new mount API with ENOSYS or EPERM and may
// still allow mount(2): both are tried, then the symlink.
TEST(Placement, AutoTriesTheNewMountApiThenMountThenTheSymlink) {
  for (int refused_new : {ENOSYS, EPERM}) {
    PlaceFixture f;
    f.ops.new_api_errno = refused_new;
    f.ops.classic_errno = EACCES;  // AppArmor's docker-default
    ASSERT_NO_FATAL_FAILURE(f.Open());
    auto r = f.Place(Method::kAuto);
    ASSERT_TRUE(r) << r.error().msg;
    EXPECT_EQ(r->placement, Placement::kSymlink);
    EXPECT_EQ(f.ops.BindCalls(), (std::vector<std::string>{"new-api", "mount(2)"}));
    for (const auto& b : f.ops.binds) {
      EXPECT_EQ(b.source, f.Real("state/run")) << b.how << ": the volume's run directory is the source";
      EXPECT_EQ(b.target, f.Real("home/data/elastic-agent-aaaaaa/run")) << b.how << ": VH/run the target";
    }
    auto status = ExamineRun(f.vh, &f.state_run, f.volume->RunPath(Layout::kRun));
    ASSERT_TRUE(status);
    EXPECT_EQ(status->kind, RunStatus::Kind::kLinked) << "VH/run -> STATE/run";
  }
}

TEST(Placement, MountAllowedAfterTheNewApiIsRefusedBinds) {
  PlaceFixture f;
  f.ops.new_api_errno = ENOSYS;
  f.ops.classic_errno = 0;
  ASSERT_NO_FATAL_FAILURE(f.Open());
  auto r = f.Place(Method::kAuto);
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_EQ(r->placement, Placement::kBind);
  EXPECT_EQ(f.ops.BindCalls(), (std::vector<std::string>{"new-api", "mount(2)"}));
}

// An image without VH/run gets a mount point to bind onto.
TEST(Placement, AMissingRunDirectoryBecomesTheMountPoint) {
  PlaceFixture f;
  ::rmdir(f.Run().c_str());
  f.ops.new_api_errno = 0;
  ASSERT_NO_FATAL_FAILURE(f.Open());
  auto r = f.Place(Method::kBind);
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_EQ(r->placement, Placement::kBind);
  EXPECT_TRUE(test::IsDir(f.Run()));
  ASSERT_EQ(f.ops.binds.size(), 1u);
  EXPECT_EQ(f.ops.binds[0].target, f.Real("home/data/elastic-agent-aaaaaa/run"));
}

TEST(Placement, ForcedBindWithoutPermissionIs73AndSaysWhatToGrant) {
  PlaceFixture f;
  ASSERT_NO_FATAL_FAILURE(f.Open());
  auto r = f.Place(Method::kBind);
  ASSERT_FALSE(r);
  EXPECT_EQ(ExitCodeFor(r.error().kind), 73);
  EXPECT_NE(r.error().hint.find("CAP_SYS_ADMIN"), std::string::npos) << r.error().hint;
  EXPECT_NE(r.error().msg.find("Operation not permitted (open_tree, move_mount: Operation not permitted)"),
            std::string::npos)
      << "both APIs' errors: " << r.error().msg;
  EXPECT_FALSE(test::IsSymlink(f.Run())) << "bind only: no symlink";
}

// Only "not permitted" falls back: another failure is a real problem.
TEST(Placement, AMountFailureOtherThanPermissionIsNotHidden) {
  PlaceFixture f;
  f.ops.classic_errno = EINVAL;
  ASSERT_NO_FATAL_FAILURE(f.Open());
  auto r = f.Place(Method::kAuto);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, EINVAL);
  EXPECT_FALSE(test::IsSymlink(f.Run()));
}

TEST(Placement, SymlinkMethodNeverMounts) {
  PlaceFixture f;
  ASSERT_NO_FATAL_FAILURE(f.Open());
  auto r = f.Place(Method::kSymlink);
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_TRUE(f.ops.binds.empty()) << "the symlink method never mounts";
  EXPECT_TRUE(test::IsSymlink(f.Run()));
}

TEST(Placement, TheImagesStateIsMigratedBeforeTheSymlinkReplacesIt) {
  PlaceFixture f;
  test::WriteFile(f.Run() + "/agent.id", "from-the-image");
  ASSERT_NO_FATAL_FAILURE(f.Open());
  auto r = f.Place(Method::kAuto);
  ASSERT_TRUE(r) << r.error().msg;
  ASSERT_TRUE(r->migration);
  EXPECT_EQ(r->migration->moved, 1u);
  EXPECT_EQ(test::ReadFile(f.t / "state/run/agent.id"), "from-the-image");
  EXPECT_EQ(test::ReadFile(f.Run() + "/agent.id"), "from-the-image") << "seen through the symlink";
}

TEST(Placement, ASecondRunFindsTheSymlinkAndChangesNothing) {
  PlaceFixture f;
  ASSERT_NO_FATAL_FAILURE(f.Open());
  ASSERT_TRUE(f.Place(Method::kAuto));
  f.ops.binds.clear();
  auto second = f.Place(Method::kAuto);
  ASSERT_TRUE(second) << second.error().msg;
  EXPECT_FALSE(second->changed);
  EXPECT_EQ(second->placement, Placement::kSymlink);
  EXPECT_TRUE(f.ops.binds.empty()) << "nothing to mount when it is in place";
}

TEST(Placement, ASymlinkToSomewhereElseIsReplaced) {
  PlaceFixture f;
  test::MakeDirs(f.t / "elsewhere");
  ::rmdir(f.Run().c_str());
  test::Symlink(f.t / "elsewhere", f.Run());
  ASSERT_NO_FATAL_FAILURE(f.Open());
  auto r = f.Place(Method::kSymlink);
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_TRUE(r->changed);
  auto status = ExamineRun(f.vh, &f.state_run, f.volume->RunPath(Layout::kRun));
  ASSERT_TRUE(status);
  EXPECT_EQ(status->kind, RunStatus::Kind::kLinked);
}

// An older hand-made set-up symlinked VH/run to where it kept the state:
// that state is the agent's (its identity), and must not be left behind.
TEST(Placement, TheStateASymlinkPointsAtIsMigratedBeforeItIsReplaced) {
  for (Method method : {Method::kSymlink, Method::kAuto}) {
    PlaceFixture f;
    f.ops.new_api_errno = 0;  // auto: the bind mount works
    test::WriteFile(f.t / "old-state/run/agent.id", "the-identity");
    test::WriteFile(f.t / "old-state/run/default/filebeat/registry", "offsets");
    ::rmdir(f.Run().c_str());
    test::Symlink(f.t / "old-state/run", f.Run());
    ASSERT_NO_FATAL_FAILURE(f.Open());
    auto r = f.Place(method);
    ASSERT_TRUE(r) << r.error().msg;
    ASSERT_TRUE(r->migration) << "the state at the symlink's target is migrated";
    EXPECT_EQ(r->migration->moved, 2u);
    EXPECT_EQ(test::ReadFile(f.t / "state/run/agent.id"), "the-identity");
    EXPECT_EQ(test::ReadFile(f.t / "state/run/default/filebeat/registry"), "offsets");
    EXPECT_FALSE(test::Exists(f.t / "old-state/run/agent.id")) << "moved, not copied: one owner of the state";
    EXPECT_EQ(r->placement, method == Method::kSymlink ? Placement::kSymlink : Placement::kBind);
  }
}

TEST(Placement, ADanglingSymlinkIsReplacedWithAWarning) {
  PlaceFixture f;
  ::rmdir(f.Run().c_str());
  test::Symlink(f.t / "gone/run", f.Run());
  ASSERT_NO_FATAL_FAILURE(f.Open());
  auto r = f.Place(Method::kSymlink);
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_FALSE(r->migration);
  EXPECT_TRUE(test::IsSymlink(f.Run()));
}

// A symlink that reaches STATE/run by another path (a symlinked parent)
// holds the volume's own state: nothing to move, and nothing moved into
// itself.
TEST(Placement, ASymlinkToTheVolumesRunDirectoryByAnotherPathMovesNothing) {
  PlaceFixture f;
  test::WriteFile(f.t / "state/run/agent.id", "the-identity");
  test::Symlink(f.t / "state", f.t / "state-alias");
  ::rmdir(f.Run().c_str());
  test::Symlink(f.t / "state-alias/run", f.Run());
  ASSERT_NO_FATAL_FAILURE(f.Open());
  auto r = f.Place(Method::kSymlink);
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_FALSE(r->migration);
  EXPECT_EQ(test::ReadFile(f.t / "state/run/agent.id"), "the-identity");
}

// Emptying the volume (a directory above it, one inside it, or the versioned home) into
// STATE/run would move the volume into itself: refused, nothing changed.
TEST(Placement, ASymlinkToTheVolumeOrAboveIs65AndChangesNothing) {
  for (std::string target :
       {"state", ".", "home/data/elastic-agent-aaaaaa", "state/.agent-init", "state/data/run"}) {
    PlaceFixture f;
    test::WriteFile(f.t / "state/run/agent.id", "the-identity");
    test::WriteFile(f.t / "state/data/run/agent.id", "another");
    ::rmdir(f.Run().c_str());
    test::Symlink(target == "." ? f.t.path() : f.t / target, f.Run());
    ASSERT_NO_FATAL_FAILURE(f.Open());
    auto r = f.Place(Method::kSymlink);
    ASSERT_FALSE(r) << target;
    EXPECT_EQ(ExitCodeFor(r.error().kind), 65) << target;
    EXPECT_NE(r.error().msg.find("will not move"), std::string::npos) << r.error().msg;
    EXPECT_TRUE(test::IsSymlink(f.Run())) << target << ": left as it was";
    EXPECT_EQ(test::ReadFile(f.t / "state/run/agent.id"), "the-identity");
  }
}

TEST(Placement, AFileAtTheRunDirectoryIs65) {
  PlaceFixture f;
  ::rmdir(f.Run().c_str());
  test::WriteFile(f.Run(), "not a directory");
  ASSERT_NO_FATAL_FAILURE(f.Open());
  auto r = f.Place(Method::kAuto);
  ASSERT_FALSE(r);
  EXPECT_EQ(ExitCodeFor(r.error().kind), 65);
  EXPECT_EQ(test::ReadFile(f.Run()), "not a directory") << "left as it was";
}

}  // namespace
}  // namespace agent_init
