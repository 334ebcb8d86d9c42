// How the volume's mount flags and labels show: a read-only volume is a
// clear 73; inspect reports a nosuid mount and an SELinux label (the label is
// set as an extended attribute, which needs root, not an SELinux kernel);
// an install directory on the volume through another mount is refused.
#include <sys/mount.h>
#include <sys/xattr.h>

#include <cstring>

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

class VolumeFlagsNs : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_MOUNT_NAMESPACE();
    test::Make711Home(t_ / "home");
    test::MakeDirs(t_ / "state");
  }
  // In the child: STATE as its own mount with `flags` (a bind of itself).
  std::string RemountState(unsigned long flags) {
    std::string state = t_ / "state";
    if (::mount(state.c_str(), state.c_str(), nullptr, MS_BIND, nullptr) < 0 ||
        ::mount(nullptr, state.c_str(), nullptr, MS_REMOUNT | MS_BIND | flags, nullptr) < 0) {
      return std::string("remount ") + state + ": " + std::strerror(errno);
    }
    return "";
  }
  std::vector<std::string> Args(std::vector<std::string> more) {
    std::vector<std::string> args{"--home", t_ / "home", "--state", t_ / "state", "--method", "symlink"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  test::TempDir t_;
};

TEST_F(VolumeFlagsNs, AReadOnlyVolumeIs73AndSaysSo) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = RemountState(MS_RDONLY); !e.empty()) return e;
    RunResult r = AgentInit(Args({"prepare"}));
    NS_CHECK(r.status == 73, "exit " + std::to_string(r.status) + ": " + r.err);
    NS_CHECK(Contains(r.err, "is mounted read-only"), r.err);
    NS_CHECK(Contains(r.err, "mount the volume read-write"), r.err);
    return "";
  });
  EXPECT_EQ(failure, "");
}

TEST_F(VolumeFlagsNs, InspectReportsANosuidVolumeAndItsSelinuxLabel) {
  const std::string label = "system_u:object_r:var_lib_t:s0";
  ASSERT_EQ(::setxattr((t_ / "state").c_str(), "security.selinux", label.c_str(), label.size() + 1, 0), 0)
      << std::strerror(errno);
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = RemountState(MS_NOSUID); !e.empty()) return e;
    RunResult r = AgentInit(Args({"inspect", "--json"}));
    NS_CHECK(r.status == 0, "exit " + std::to_string(r.status) + ": " + r.out + r.err);
    NS_CHECK(Contains(r.out, "\"role\":\"state\""), r.out);
    std::string state = r.out.substr(r.out.find("\"role\":\"state\""));
    state = state.substr(0, state.find('}'));
    NS_CHECK(Contains(state, "\"nosuid\":true"), state);
    NS_CHECK(Contains(state, "\"selinux_label\":\"" + label + "\""), state);
    NS_CHECK(Contains(r.out, "carries the SELinux label"), r.out);
    RunResult text = AgentInit(Args({"inspect"}));
    NS_CHECK(Contains(text.out, "[nosuid] [selinux " + label + "]"), text.out);
    return "";
  });
  EXPECT_EQ(failure, "");
}

// inspect shows the label of every place; prepare reads only the volume's,
// the one its rules look at, and warns of it at every start.
TEST_F(VolumeFlagsNs, PrepareWarnsOfTheVolumesLabelAndInspectShowsEveryPlacesLabel) {
  const std::string label = "system_u:object_r:var_lib_t:s0";
  const std::string install_label = "system_u:object_r:usr_t:s0";
  const std::string install = t_ / "home/data/elastic-agent-9b2fec/install";
  ASSERT_EQ(::setxattr((t_ / "state").c_str(), "security.selinux", label.c_str(), label.size() + 1, 0), 0)
      << std::strerror(errno);
  ASSERT_EQ(
      ::setxattr(install.c_str(), "security.selinux", install_label.c_str(), install_label.size() + 1, 0), 0)
      << std::strerror(errno);
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = RemountState(0); !e.empty()) return e;
    RunResult r = AgentInit(Args({"inspect", "--json"}));
    NS_CHECK(Contains(r.out, "\"role\":\"install\""), r.out);
    std::string place = r.out.substr(r.out.find("\"role\":\"install\""));
    place = place.substr(0, place.find('}'));
    NS_CHECK(Contains(place, "\"selinux_label\":\"" + install_label + "\""), place);
    RunResult p = AgentInit(Args({"prepare"}));
    NS_CHECK(p.status == 0, "exit " + std::to_string(p.status) + ": " + p.err);
    NS_CHECK(Contains(p.err, "carries the SELinux label `" + label + "`"), p.err);
    return "";
  });
  EXPECT_EQ(failure, "");
}

// The image's install directory, a symlink into the volume's filesystem
// mounted a second time (its own mount id on the volume's device): the agent
// would run programs from the volume. Only the mount table's paths tell it
// apart from another directory of that filesystem, and the table speaks of
// real paths: VH/install's is the symlink's target, and the volume is given
// through a symlink too.
TEST_F(VolumeFlagsNs, AnInstallDirectoryOnTheVolumeThroughAnotherMountIs65) {
  test::MakeDirs(t_ / "fs");
  test::Symlink(t_ / "state", t_ / "state-link");
  const std::string install = t_ / "home/data/elastic-agent-9b2fec/install";
  std::string failure = InMountNamespace([&]() -> std::string {
    const std::string fs = t_ / "fs", state = t_ / "state";
    if (::mount("tmpfs", fs.c_str(), "tmpfs", 0, "mode=0755") < 0)
      return std::string("mount tmpfs: ") + std::strerror(errno);
    test::MakeDirs(fs + "/volume/install");
    test::MakeDirs(fs + "/elsewhere");
    if (::mount((fs + "/volume").c_str(), state.c_str(), nullptr, MS_BIND, nullptr) < 0)
      return std::string("bind the volume: ") + std::strerror(errno);
    const std::vector<std::string> args{"--home",   t_ / "home", "--state", t_ / "state-link",
                                        "--method", "symlink",   "prepare"};
    // Another directory of the same filesystem is not the volume.
    if (::rmdir(install.c_str()) < 0) return std::string("rmdir: ") + std::strerror(errno);
    test::Symlink(fs + "/elsewhere", install);
    RunResult ok = AgentInit(args);
    NS_CHECK(ok.status == 0, "elsewhere: exit " + std::to_string(ok.status) + ": " + ok.err);
    ::unlink(install.c_str());
    test::Symlink(fs + "/volume/install", install);
    RunResult r = AgentInit(args);
    NS_CHECK(r.status == 65, "exit " + std::to_string(r.status) + ": " + r.err);
    NS_CHECK(Contains(r.err, "install` is on the state volume"), r.err);
    return "";
  });
  EXPECT_EQ(failure, "");
}

}  // namespace
}  // namespace agent_init
