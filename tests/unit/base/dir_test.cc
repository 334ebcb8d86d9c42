#include "base/dir.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "namespace.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

TEST(Dir, OpenSubRefusesSymlinksAnywhereOnThePath) {
  test::TempDir t;
  test::MakeDirs(t / "vol/a/b");
  test::MakeDirs(t / "outside/b");
  test::Symlink(t / "outside", t / "vol/link");
  auto vol = Dir::OpenTrusted(t / "vol");
  ASSERT_TRUE(vol);
  EXPECT_TRUE(vol->OpenSub("a/b"));
  auto via_link = vol->OpenSub("link/b");
  ASSERT_FALSE(via_link);
  EXPECT_EQ(ExitCodeFor(via_link.error().kind), 77);
  EXPECT_NE(via_link.error().msg.find("symlink"), std::string::npos);
  auto leaf_link = vol->OpenSub("link");
  ASSERT_FALSE(leaf_link);
}

// A symlink in the volume swapped back for a directory just after the open
// refused it (RENAME_EXCHANGE races can do this at will). The refusal says
// what the open found, a symlink (77), not what a second look finds: with
// openat2 there is no second look; without it (ENOSYS: before Linux 5.6, an
// older seccomp profile), a directory found by the second look is refused
// as the swap it is, still 77.
std::string SwappedBackRefusal(const test::TempDir& t) {
  test::MakeDirs(t / "vol");
  test::MakeDirs(t / "outside");
  test::Symlink(t / "outside", t / "vol/x");
  ::setenv("AGENT_INIT_TEST_HOOK_STEP", "directory open refused", 1);
  ::setenv("AGENT_INIT_TEST_HOOK", ("rm " + t / "vol/x" + " && mkdir " + t / "vol/x").c_str(), 1);
  auto vol = Dir::OpenTrusted(t / "vol");
  auto x = vol->OpenSub("x");
  ::unsetenv("AGENT_INIT_TEST_HOOK_STEP");
  ::unsetenv("AGENT_INIT_TEST_HOOK");
  if (x) return "opened";
  if (!test::IsDir(t / "vol/x")) return "the hook did not swap it back";
  return std::to_string(ExitCodeFor(x.error().kind)) + " " + x.error().msg;
}

TEST(Dir, ARefusalSaysWhatTheOpenFoundNotASecondLook) {
  test::TempDir t;
  struct open_how how {};
  how.flags = O_RDONLY | O_DIRECTORY;
  const bool openat2 = ::syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how) >= 0;
  std::string got = SwappedBackRefusal(t);
  EXPECT_TRUE(got.starts_with("77 ")) << got;
  if (openat2) {
    EXPECT_NE(got.find("symlink"), std::string::npos) << got;
  }
}

TEST(Dir, WithoutOpenat2ASwapSeenByTheSecondLookIsRefusedAsASwap) {
  test::TempDir t;
  std::string got = test::InChild([&]() -> std::string {
    return test::DenySyscall(SYS_openat2) ? SwappedBackRefusal(t) : "no seccomp filter";
  });
  EXPECT_TRUE(got.starts_with("77 ") && got.find("changed while") != std::string::npos) << got;
}

TEST(Dir, RefusesDotDotAndAbsolutePaths) {
  test::TempDir t;
  test::MakeDirs(t / "vol/a");
  auto vol = Dir::OpenTrusted(t / "vol");
  EXPECT_FALSE(vol->OpenSub("../vol"));
  EXPECT_FALSE(vol->OpenSub("a/../.."));
  EXPECT_FALSE(vol->OpenSub("/etc"));
  EXPECT_FALSE(vol->OpenSub(""));
  EXPECT_FALSE(vol->MakeSub("a//b", 0755));
}

TEST(Dir, MakeSubCreatesButNeverThroughASymlink) {
  test::TempDir t;
  test::MakeDirs(t / "vol");
  test::MakeDirs(t / "outside");
  test::Symlink(t / "outside", t / "vol/run");
  auto vol = Dir::OpenTrusted(t / "vol");
  auto made = vol->MakeSub("x/y/z", 0750);
  ASSERT_TRUE(made) << made.error().msg;
  EXPECT_TRUE(test::IsDir(t / "vol/x/y/z"));
  auto run = vol->MakeSub("run/state", 0750);
  ASSERT_FALSE(run);
  EXPECT_EQ(ExitCodeFor(run.error().kind), 77);
  EXPECT_FALSE(test::Exists(t / "outside/state"));
}

TEST(Dir, FifoWhereADirectoryIsExpectedIsRefusedWithoutBlocking) {
  test::TempDir t;
  test::MakeDirs(t / "vol");
  ASSERT_EQ(::mkfifo((t / "vol/run").c_str(), 0600), 0);
  auto vol = Dir::OpenTrusted(t / "vol");
  auto run = vol->MakeSub("run", 0750);
  ASSERT_FALSE(run);
  EXPECT_EQ(ExitCodeFor(run.error().kind), 65);
  EXPECT_NE(run.error().msg.find("expected a directory"), std::string::npos);
}

TEST(Dir, FifoWhereAFileIsExpectedIsRefusedWithoutBlocking) {
  test::TempDir t;
  ASSERT_EQ(::mkfifo((t / "journal").c_str(), 0600), 0);
  auto dir = Dir::OpenTrusted(t.path());
  auto content = dir->ReadSmallFile("journal");
  ASSERT_FALSE(content);
  EXPECT_NE(content.error().msg.find("regular file"), std::string::npos);
}

TEST(Dir, ReadSmallFileLimitsAndMissing) {
  test::TempDir t;
  test::WriteFile(t / "big", std::string(100, 'x'));
  auto dir = Dir::OpenTrusted(t.path());
  auto missing = dir->ReadSmallFile("nope");
  ASSERT_TRUE(missing);
  EXPECT_FALSE(*missing);
  EXPECT_FALSE(dir->ReadSmallFile("big", 10));
  auto ok = dir->ReadSmallFile("big", 100);
  ASSERT_TRUE(ok && *ok);
  EXPECT_EQ((*ok)->size(), 100u);
}

TEST(Dir, StatDoesNotFollowAndReportsMissing) {
  test::TempDir t;
  test::Symlink("/etc", t / "l");
  auto dir = Dir::OpenTrusted(t.path());
  auto st = dir->Stat("l");
  ASSERT_TRUE(st && *st);
  EXPECT_TRUE(S_ISLNK((*st)->stx_mode));
  auto none = dir->Stat("none");
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  auto through = dir->Stat("l/passwd");
  EXPECT_FALSE(through) << "a symlink in the middle is refused";
}

TEST(Dir, MissingTrustedDirectoryKind) {
  auto d = Dir::OpenTrusted("/nonexistent/agent-init", Kind::kCannotPlace);
  ASSERT_FALSE(d);
  EXPECT_EQ(ExitCodeFor(d.error().kind), 73);
  EXPECT_EQ(d.error().err, ENOENT);
}

TEST(NormalizePath, CollapsesDotsAndSlashes) {
  EXPECT_EQ(NormalizePath("/a//b/./c/../d/"), "/a/b/d");
  EXPECT_EQ(NormalizePath("/../.."), "/");
  EXPECT_EQ(NormalizePath("/"), "/");
}

TEST(Quote, EscapesControlBytes) { EXPECT_EQ(Q("a\nb"), "`a\\x0ab`"); }

// One containment rule for paths (exec places, a symlinked VH/run): the two
// copies it replaces said that every path was within "" (a real path the
// kernel could not tell), and that "/a/b" was not within "/a/".
TEST(PathWithin, EdgeCases) {
  EXPECT_TRUE(PathWithin("/a/b", "/a"));
  EXPECT_TRUE(PathWithin("/a", "/a"));
  EXPECT_TRUE(PathWithin("/a/b", "/"));
  EXPECT_TRUE(PathWithin("/a/b", "/a/"));
  EXPECT_TRUE(PathWithin("/a/", "/a"));
  EXPECT_FALSE(PathWithin("/ab", "/a"));
  EXPECT_FALSE(PathWithin("/a", "/a/b"));
  EXPECT_FALSE(PathWithin("/a/b", "")) << "an unknown real path holds nothing";
  EXPECT_FALSE(PathWithin("", "/a"));
  EXPECT_FALSE(PathWithin("a/b", "a")) << "absolute paths only";
}

}  // namespace
}  // namespace agent_init
