// A hostile volume: the owner of the host directory behind it plants hard
// links to files outside it (a root-only one on the same filesystem) and
// swaps entries while agent-init works. agent-init never writes, chowns,
// copies or hands the agent an fd of such a file, and a refusal says what
// it found. Each test starts agent-init as --user 1000:1000, where a
// chown would give the agent the other file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "binary.h"
#include "home_fixture.h"
#include "namespace.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

using test::AgentInit;
using test::Contains;
using test::InMountNamespace;
using test::RunResult;

class HostileNs : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_MOUNT_NAMESPACE();
    if (::geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root to hand the volume to another user";
    ::chmod(t_.path().c_str(), 0755);
    test::Make711Home(t_ / "home");
    test::MakeDirs(t_ / "state", 0755);
    // A root-only file on the volume's filesystem, outside the volume.
    test::WriteFile(secret_, "SECRET\n", 0600);
  }

  std::vector<std::string> Args(std::vector<std::string> more) {
    std::vector<std::string> a{"--home", t_ / "home", "--state", t_ / "state", "--method", "symlink"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }

  // `name` replaced by a second name of the secret.
  void Plant(const std::string& name) {
    ::unlink(name.c_str());
    ASSERT_EQ(::link(secret_.c_str(), name.c_str()), 0) << name;
  }

  // The secret as it was made: root's, 0600, its content.
  std::string SecretChanged() {
    struct stat st {};
    if (::stat(secret_.c_str(), &st) < 0) return "the secret is gone";
    if (st.st_uid != 0 || st.st_gid != 0) return "the secret was chowned to " + std::to_string(st.st_uid);
    if ((st.st_mode & 07777) != 0600) return "the secret's mode changed";
    if (test::ReadFile(secret_) != "SECRET\n") return "the secret was written: " + test::ReadFile(secret_);
    return "";
  }

  test::TempDir t_;
  const std::string secret_ = t_ / "secret";
};

// The agent inherits the lock's fd: a lock that is a second name of a
// root-only file is refused (77) before anything runs, and the lock the
// agent gets is open read-only (flock needs no more).
TEST_F(HostileNs, AHardLinkedLockIsRefusedAndTheAgentsLockIsReadOnly) {
  std::string failure = InMountNamespace([&]() -> std::string {
    const std::string lock = t_ / "state/.agent-init/lock";
    RunResult first = AgentInit(Args({"--user", "1000:1000", "--", "/bin/sh", "-c",
                                      "for f in /proc/$$/fd/*; do [ \"$(readlink $f)\" = " + lock +
                                          " ] && grep ^flags: /proc/$$/fdinfo/${f##*/}; done; true"}));
    NS_CHECK(first.status == 0, "first start: " + first.err);
    NS_CHECK(Contains(first.out, "flags:"), "the agent holds the lock: " + first.out);
    const std::string flags = first.out.substr(first.out.find("flags:") + 6);
    const long value = std::strtol(flags.c_str(), nullptr, 8);
    NS_CHECK((value & O_ACCMODE) == O_RDONLY, "the agent's lock fd is read-only: " + first.out);
    Plant(lock);
    RunResult r = AgentInit(Args({"--user", "1000:1000", "--", "/bin/echo", "RAN"}));
    NS_CHECK(r.status == 77, "exit " + std::to_string(r.status) + ": " + r.err);
    NS_CHECK(Contains(r.err, lock) && Contains(r.err, "hard link"), "names the lock and why: " + r.err);
    NS_CHECK(!Contains(r.out, "RAN"), "the agent must not start");
    NS_CHECK(SecretChanged().empty(), SecretChanged());
    return "";
  });
  EXPECT_EQ(failure, "");
}

// agent-init's records are replaced by a new file renamed over the name,
// never written through it; the files it hands to --user are chowned
// through an fd of the very file, and one with several names is refused.
TEST_F(HostileNs, HardLinkedRecordsAreReplacedOrRefusedNeverWrittenOrChowned) {
  struct Case {
    const char* name;
    int status;  // 0: replaced; 77: refused
  };
  // owner: rewritten at every start; chowned: rewritten when its ids do
  // not match (the secret's content does not); history and journal: read.
  const Case cases[] = {{"owner", 0}, {"chowned", 0}, {"history", 77}, {"journal", 77}};
  std::string failure = InMountNamespace([&]() -> std::string {
    for (const auto& c : cases) {
      const std::string path = t_ / "state/.agent-init/" + c.name;
      RunResult first = AgentInit(Args({"--user", "1000:1000", "prepare"}));
      NS_CHECK(first.status == 0, std::string(c.name) + ": first start: " + first.err);
      Plant(path);
      RunResult r = AgentInit(Args({"--user", "1000:1000", "prepare"}));
      NS_CHECK(r.status == c.status, std::string(c.name) + ": exit " + std::to_string(r.status) + ": " + r.err);
      NS_CHECK(SecretChanged().empty(), std::string(c.name) + ": " + SecretChanged());
      if (c.status == 77) {
        NS_CHECK(Contains(r.err, path) && Contains(r.err, "hard link"), std::string(c.name) + ": " + r.err);
        ::unlink(path.c_str());
      } else {
        struct stat st {};
        NS_CHECK(::stat(path.c_str(), &st) == 0 && st.st_nlink == 1 && st.st_uid == 1000,
                 std::string(c.name) + ": a new file of its own, handed over");
      }
      ::unlink(secret_.c_str());
      test::WriteFile(secret_, "SECRET\n", 0600);
    }
    return "";
  });
  EXPECT_EQ(failure, "");
}

// The chown walk, inside a directory, while the directory's name is swapped
// for a second name of the secret: the walk chowns the directory it walked
// (through its fd), never what the name leads to afterwards.
TEST_F(HostileNs, TheChownWalkChownsWhatItOpenedNotWhatTheNameBecame) {
  std::string failure = InMountNamespace([&]() -> std::string {
    RunResult first = AgentInit(Args({"prepare"}));
    NS_CHECK(first.status == 0, "first start: " + first.err);
    const std::string sub = t_ / "state/run/sub";
    test::WriteFile(sub + "/file", "state");
    const std::string swap = "[ \"$AGENT_INIT_TEST_HOOK_PATH\" = " + sub + " ] && mv " + sub + " " + sub +
                             ".gone && ln " + secret_ + " " + sub + "; true";
    RunResult r = AgentInit(Args({"--user", "1000:1000", "prepare"}),
                            {"AGENT_INIT_TEST_HOOK_STEP=chown walked below", "AGENT_INIT_TEST_HOOK=" + swap});
    NS_CHECK(test::Exists(sub + ".gone"), "the hook swapped the directory: " + r.err);
    NS_CHECK(SecretChanged().empty(), SecretChanged() + "; " + r.err);
    struct stat st {};
    NS_CHECK(::stat((sub + ".gone").c_str(), &st) == 0 && st.st_uid == 1000,
             "the directory walked is the one chowned");
    return "";
  });
  EXPECT_EQ(failure, "");
}

// A version change copies STATE/run into a snapshot. A second name of the
// secret there would become a new file with one name, which the chown walk
// hands to the agent: the copy refuses it (77), leaves nothing behind, and
// the state is as it was. Without a snapshot nothing is copied, and the
// walk leaves the file alone.
TEST_F(HostileNs, AHardLinkInTheStateIsNotCopiedIntoASnapshot) {
  test::MakeImages(t_.path(), {"elastic-agent-aaaaaa", "elastic-agent-bbbbbb"});
  auto start = [&](const char* vh, std::vector<std::string> more = {}) {
    std::vector<std::string> a{"--home", t_ / std::string("image-") + vh, "--state", t_ / "state",
                               "--method", "symlink"};
    a.insert(a.end(), more.begin(), more.end());
    a.push_back("prepare");
    return AgentInit(a);
  };
  std::string failure = InMountNamespace([&]() -> std::string {
    NS_CHECK(start("elastic-agent-aaaaaa").status == 0, "first start of A");
    test::WriteFile(t_ / "state/run/agent.id", "A");
    Plant(t_ / "state/run/linked");
    const std::string state = test::TreeDigest(t_ / "state/run");
    RunResult r = start("elastic-agent-bbbbbb", {"--user", "1000:1000"});
    NS_CHECK(r.status == 77, "exit " + std::to_string(r.status) + ": " + r.err);
    NS_CHECK(Contains(r.err, "state/run/linked") && Contains(r.err, "hard link"), r.err);
    NS_CHECK(test::TreeDigest(t_ / "state/run") == state, "the live state is untouched");
    NS_CHECK(test::TreeDigest(t_ / "state/.agent-init/snapshots").find("linked") == std::string::npos,
             "no copy of it is left");
    NS_CHECK(SecretChanged().empty(), SecretChanged());
    RunResult none = start("elastic-agent-bbbbbb", {"--user", "1000:1000", "--keep-snapshots", "0"});
    NS_CHECK(none.status == 0, "--keep-snapshots 0: " + none.err);
    NS_CHECK(Contains(none.err, "several hard links"), "the walk says what it left: " + none.err);
    NS_CHECK(SecretChanged().empty(), SecretChanged());
    return "";
  });
  EXPECT_EQ(failure, "");
}

}  // namespace
}  // namespace agent_init
