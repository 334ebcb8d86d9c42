#include "base/tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace agent_init {
namespace {

struct stat Lstat(const std::string& p) {
  struct stat st {};
  ::lstat(p.c_str(), &st);
  return st;
}

TEST(Tree, CopyKeepsModesTimesSymlinksAndFifos) {
  test::TempDir t;
  test::WriteFile(t / "src/run/a", "alpha", 0640);
  test::WriteFile(t / "src/run/sub/b", "beta", 0600);
  test::Symlink("sub/b", t / "src/run/link");
  test::Symlink("/etc/passwd", t / "src/run/abs-link");
  ASSERT_EQ(::mkfifo((t / "src/run/fifo").c_str(), 0620), 0);
  ::chmod((t / "src/run/sub").c_str(), 0710);
  struct timeval tv[2] = {{1000000, 0}, {1234567, 0}};
  ASSERT_EQ(::utimes((t / "src/run/a").c_str(), tv), 0);
  ASSERT_EQ(::utimes((t / "src/run/sub").c_str(), tv), 0);
  test::MakeDirs(t / "dst");

  auto src = Dir::OpenTrusted(t / "src");
  auto dst = Dir::OpenTrusted(t / "dst");
  CopyStats stats;
  auto r = CopyEntry(*src, "run", *dst, "copy", &stats);
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_EQ(test::TreeDigest(t / "src/run"), test::TreeDigest(t / "dst/copy"));
  EXPECT_EQ(stats.files, 3u);  // a, b, fifo
  EXPECT_EQ(stats.symlinks, 2u);
  EXPECT_EQ(Lstat(t / "dst/copy/a").st_mtime, 1234567);
  EXPECT_EQ(Lstat(t / "dst/copy/sub").st_mtime, 1234567);
  EXPECT_EQ(Lstat(t / "dst/copy/sub").st_mode & 07777, 0710u);
  EXPECT_EQ(std::string(test::ReadFile(t / "dst/copy/link")), "beta");
}

TEST(Tree, CopyKeepsHolesInSparseFiles) {
  test::TempDir t;
  test::MakeDirs(t / "src");
  int fd = ::open((t / "src/sparse").c_str(), O_WRONLY | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, "head", 4, 0), 4);
  ASSERT_EQ(::pwrite(fd, "tail", 4, 64 << 20), 4);
  ::close(fd);
  test::MakeDirs(t / "dst");
  auto src = Dir::OpenTrusted(t / "src");
  auto dst = Dir::OpenTrusted(t / "dst");
  ASSERT_TRUE(CopyEntry(*src, "sparse", *dst, "sparse"));
  struct stat a = Lstat(t / "src/sparse"), b = Lstat(t / "dst/sparse");
  EXPECT_EQ(a.st_size, b.st_size);
  EXPECT_LT(b.st_blocks * 512, 8 << 20) << "the hole was filled in";
  EXPECT_EQ(test::ReadFile(t / "src/sparse"), test::ReadFile(t / "dst/sparse"));
}

// A FIFO's copy gets its mode through the FIFO made, not by name: a symlink
// swapped in between (the test hook runs at that very point) is refused,
// and what it points at keeps its mode.
TEST(Tree, AFifoCopySwappedForASymlinkIsRefusedNotFollowed) {
  test::TempDir t;
  test::MakeDirs(t / "src");
  test::MakeDirs(t / "dst");
  ASSERT_EQ(::mkfifo((t / "src/fifo").c_str(), 0666), 0);
  ::chmod((t / "src/fifo").c_str(), 0666);
  test::WriteFile(t / "victim", "secret", 0600);
  ::setenv("AGENT_INIT_TEST_HOOK_STEP", "copy fifo made", 1);
  ::setenv("AGENT_INIT_TEST_HOOK", ("rm " + t / "dst/fifo" + " && ln -s " + t / "victim " + t / "dst/fifo").c_str(), 1);
  auto src = Dir::OpenTrusted(t / "src");
  auto dst = Dir::OpenTrusted(t / "dst");
  auto copied = CopyEntry(*src, "fifo", *dst, "fifo");
  ::unsetenv("AGENT_INIT_TEST_HOOK_STEP");
  ::unsetenv("AGENT_INIT_TEST_HOOK");
  struct stat st;
  ASSERT_EQ(::stat((t / "victim").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u) << "the symlink's target was chmodded";
  ASSERT_FALSE(copied);
  EXPECT_NE(copied.error().msg.find("replaced while it was made"), std::string::npos) << copied.error().msg;
}

// A file with two names in the volume may be one from outside it: a copy
// from the volume refuses it (77, naming it), wherever it is in the tree;
// the image's hard links are copied as files.
TEST(Tree, ACopyFromTheVolumeRefusesAFileWithSeveralNames) {
  test::TempDir t;
  test::WriteFile(t / "outside", "secret", 0600);
  test::WriteFile(t / "src/run/a/plain", "state");
  ASSERT_EQ(::link((t / "outside").c_str(), (t / "src/run/a/linked").c_str()), 0);
  test::MakeDirs(t / "dst");
  auto src = Dir::OpenTrusted(t / "src");
  auto dst = Dir::OpenTrusted(t / "dst");
  auto refused = CopyEntry(*src, "run", *dst, "copy");
  ASSERT_FALSE(refused);
  EXPECT_EQ(ExitCodeFor(refused.error().kind), 77);
  EXPECT_NE(refused.error().msg.find(t / "src/run/a/linked"), std::string::npos) << refused.error().msg;
  EXPECT_NE(refused.error().msg.find("hard link"), std::string::npos) << refused.error().msg;
  ASSERT_TRUE(CopyEntry(*src, "run", *dst, "image", nullptr, CopyFrom::kImage));
  EXPECT_EQ(test::ReadFile(t / "dst/image/a/linked"), "secret");
}

// A directory of many files is copied by two workers (tree_copy.cc's
// CopyFiles: this process and a forked child): every file arrives whole,
// with its mode, owner and times whatever the umask, the statistics count
// the child's files too, and no child is left behind.
TEST(Tree, ManyFilesAreCopiedWholeByTwoWorkers) {
  test::TempDir t;
  const int n = 300;
  const bool root = ::geteuid() == 0;
  const mode_t modes[] = {0600, 0640, 0644, 0755, 0444, 02755};
  for (int i = 0; i < n; ++i) {
    const std::string p = t / ("src/run/many/f" + std::to_string(i));
    test::WriteFile(p, std::string(static_cast<size_t>(i), 'x') + std::to_string(i));
    if (root && i % 5 == 0) {
      ASSERT_EQ(::chown(p.c_str(), 1000 + i % 3, 1000), 0);
    }
    ASSERT_EQ(::chmod(p.c_str(), modes[i % 6]), 0);  // after the chown, which clears set-ID bits
    struct timeval tv[2] = {{1000000 + i, 0}, {2000000 + i, 0}};
    ASSERT_EQ(::utimes(p.c_str(), tv), 0);
  }
  ASSERT_EQ(::mkfifo((t / "src/run/many/fifo").c_str(), 0620), 0);
  test::MakeDirs(t / "dst");
  auto src = Dir::OpenTrusted(t / "src");
  auto dst = Dir::OpenTrusted(t / "dst");
  CopyStats stats;
  const mode_t mask = ::umask(077);
  auto r = CopyEntry(*src, "run", *dst, "copy", &stats);
  ::umask(mask);
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_EQ(test::TreeDigest(t / "src/run"), test::TreeDigest(t / "dst/copy"));
  EXPECT_EQ(stats.files, n + 1u);  // and the FIFO
  EXPECT_EQ(stats.data_files, static_cast<std::uint64_t>(n));
  for (int i = 0; i < n; ++i) {
    const std::string name = "/many/f" + std::to_string(i);
    struct stat a = Lstat(t / ("src/run" + name)), b = Lstat(t / ("dst/copy" + name));
    EXPECT_EQ(b.st_mode, a.st_mode) << name;
    EXPECT_EQ(b.st_uid, a.st_uid) << name;
    EXPECT_EQ(b.st_gid, a.st_gid) << name;
    EXPECT_EQ(b.st_mtim.tv_sec, a.st_mtim.tv_sec) << name;
  }
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);  // the second worker was reaped
  EXPECT_EQ(errno, ECHILD);
}

// Whichever worker meets a file with several names, the copy is refused
// with its 77, naming it. The file sits at another place in each round, so
// that both workers meet it in some.
TEST(Tree, AHardLinkAmongManyFilesIsRefusedWhicheverWorkerMeetsIt) {
  test::TempDir t;
  test::WriteFile(t / "outside", "secret", 0600);
  const int n = 200;
  for (int i = 0; i < n; ++i) test::WriteFile(t / ("src/run/f" + std::to_string(i)), std::to_string(i));
  test::MakeDirs(t / "dst");
  auto src = Dir::OpenTrusted(t / "src");
  auto dst = Dir::OpenTrusted(t / "dst");
  for (int round = 0; round < 12; ++round) {
    const std::string linked = t / ("src/run/f" + std::to_string(round * 17 % n));
    ASSERT_EQ(::unlink(linked.c_str()), 0);
    ASSERT_EQ(::link((t / "outside").c_str(), linked.c_str()), 0);
    auto refused = CopyEntry(*src, "run", *dst, "copy" + std::to_string(round));
    ASSERT_FALSE(refused) << "round " << round;
    EXPECT_EQ(ExitCodeFor(refused.error().kind), 77);
    EXPECT_NE(refused.error().msg.find(linked), std::string::npos) << refused.error().msg;
    ASSERT_EQ(::unlink(linked.c_str()), 0);
    test::WriteFile(linked, "plain");
  }
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
}

TEST(Tree, CopyRefusesToOverwrite) {
  test::TempDir t;
  test::WriteFile(t / "a", "1");
  test::WriteFile(t / "b", "2");
  auto d = Dir::OpenTrusted(t.path());
  EXPECT_FALSE(CopyEntry(*d, "a", *d, "b"));
  EXPECT_EQ(test::ReadFile(t / "b"), "2");
}

TEST(Tree, RemoveNeverFollowsSymlinks) {
  test::TempDir t;
  test::WriteFile(t / "outside/keep", "precious");
  test::WriteFile(t / "vol/run/x/y", "data");
  test::Symlink(t / "outside", t / "vol/run/escape");
  auto vol = Dir::OpenTrusted(t / "vol");
  ASSERT_TRUE(RemoveEntry(*vol, "run"));
  EXPECT_FALSE(test::Exists(t / "vol/run"));
  EXPECT_EQ(test::ReadFile(t / "outside/keep"), "precious");
  EXPECT_TRUE(RemoveEntry(*vol, "run")) << "missing is fine";
}

TEST(Tree, DeepTreesAreRefusedNotCrashed) {
  test::TempDir t;
  std::string p = t / "deep";
  std::string rel;
  for (int i = 0; i < kMaxTreeDepth + 5; ++i) rel += (i ? "/d" : "d");
  test::MakeDirs(p + "/" + rel);
  test::MakeDirs(t / "dst");
  auto src = Dir::OpenTrusted(p);
  auto dst = Dir::OpenTrusted(t / "dst");
  auto r = CopyEntry(*src, "d", *dst, "d");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().msg.find("deeper"), std::string::npos);
}

TEST(Tree, SameFileContent) {
  test::TempDir t;
  test::WriteFile(t / "a", "same");
  test::WriteFile(t / "b", "same");
  test::WriteFile(t / "c", "diff");
  test::WriteFile(t / "d", "samesame");
  auto d = Dir::OpenTrusted(t.path());
  EXPECT_TRUE(*SameFileContent(*d, "a", *d, "b"));
  EXPECT_FALSE(*SameFileContent(*d, "a", *d, "c"));
  EXPECT_FALSE(*SameFileContent(*d, "a", *d, "d"));
}

}  // namespace
}  // namespace agent_init
