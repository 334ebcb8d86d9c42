#include "process/exec.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "temp_dir.h"

namespace agent_init {
namespace {

class PathGuard {
 public:
  explicit PathGuard(const std::string& path) : old_(std::getenv("PATH") ? std::getenv("PATH") : "") {
    ::setenv("PATH", path.c_str(), 1);
  }
  ~PathGuard() { ::setenv("PATH", old_.c_str(), 1); }

 private:
  std::string old_;
};

TEST(ResolveCommand, FindsInPathInOrder) {
  test::TempDir t;
  test::WriteFile(t / "a/tool", "#!/bin/sh\n", 0755);
  test::WriteFile(t / "b/tool", "#!/bin/sh\n", 0755);
  PathGuard g(t / "missing" + ":" + t / "a" + ":" + t / "b");
  EXPECT_EQ(ResolveCommand("tool"), t / "a/tool");
}

TEST(ResolveCommand, NotFoundIs127) {
  PathGuard g("/nonexistent");
  auto r = ResolveCommand("no-such-tool");
  ASSERT_FALSE(r);
  EXPECT_EQ(ExitCodeFor(r.error().kind), 127);
  EXPECT_NE(r.error().msg.find("no-such-tool"), std::string::npos);
}

TEST(ResolveCommand, NotExecutableIs126) {
  test::TempDir t;
  test::WriteFile(t / "tool", "data", 0644);
  PathGuard g(t.path());
  auto r = ResolveCommand("tool");
  ASSERT_FALSE(r);
  EXPECT_EQ(ExitCodeFor(r.error().kind), 126);
  EXPECT_NE(r.error().msg.find(t / "tool"), std::string::npos);
}

TEST(ResolveCommand, DirectoriesAreSkipped) {
  test::TempDir t;
  test::MakeDirs(t / "a/tool");
  test::WriteFile(t / "b/tool", "#!/bin/sh\n", 0755);
  PathGuard g(t / "a" + ":" + t / "b");
  EXPECT_EQ(ResolveCommand("tool"), t / "b/tool");
}

TEST(ExecCommand, PathWithSlashIsUsedAsIs) {
  auto e = ExecCommand({"/nonexistent/agent"}, nullptr);
  EXPECT_EQ(ExitCodeFor(e.kind), 127);
  EXPECT_NE(e.msg.find("/nonexistent/agent"), std::string::npos);
}

}  // namespace
}  // namespace agent_init
