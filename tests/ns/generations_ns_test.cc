// Every agent generation on a noexec volume, with agent-sim standing in for
// the agent (it installs, renames and executes like the real one), in
// private mount namespaces. And the read-only root: the init container's
// --seed-data copy mounted at HOME/data.
#include <sys/mount.h>

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

std::string Sim() { return AGENT_SIM_BINARY; }

struct Generation {
  const char* name;  // AGENT_SIM_GENERATION
  const char* mode;  // run or container
  const char* vh;    // versioned home directory name
  std::vector<std::string> dirs;
};

class GenerationsNs : public ::testing::TestWithParam<Generation> {
 protected:
  void SetUp() override {
    REQUIRE_MOUNT_NAMESPACE();
    const Generation& g = GetParam();
    test::MakeSimHome(t_ / "home", g.vh, g.dirs, Sim());
    test::MakeDirs(t_ / "state");
  }
  std::string MountNoexecVolume() {
    if (::mount("tmpfs", (t_ / "state").c_str(), "tmpfs", MS_NOEXEC, "mode=0755") < 0) {
      return std::string("tmpfs: ") + std::strerror(errno);
    }
    return "";
  }
  std::vector<std::string> Env() {
    return {std::string("AGENT_SIM_GENERATION=") + GetParam().name, "STATE_PATH"};
  }
  RunResult Agent(bool with_agent_init) {
    const Generation& g = GetParam();
    std::vector<std::string> cmd{t_ / "home/elastic-agent", g.mode};
    if (!with_agent_init) {
      auto env = Env();
      env.back() = "STATE_PATH=" + t_ / "state";
      return test::Run(cmd, env);
    }
    std::vector<std::string> args{"--home", t_ / "home", "--state", t_ / "state", "--"};
    args.insert(args.end(), cmd.begin(), cmd.end());
    return AgentInit(args, Env());
  }
  test::TempDir t_;
};

// Each generation, one line: agent-init in front, a noexec volume; the
// identity survives "recreating the container" (the namespace).
TEST_P(GenerationsNs, KeepsIdentityAndRunsComponentsOnANoexecVolume) {
  // One namespace for the volume's lifetime; the "containers" are the runs.
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    RunResult a = Agent(true);
    NS_CHECK(a.status == 0, "first start: " + a.out + a.err);
    NS_CHECK(Contains(a.out, "\"install_ok\":true,\"exec_ok\":true"), a.out);
    NS_CHECK(Contains(a.out, "\"starts\":1"), a.out);
    RunResult b = Agent(true);
    NS_CHECK(b.status == 0 && Contains(b.out, "\"starts\":2"), "second start: " + b.out + b.err);
    auto id = [](const std::string& s) { return s.substr(s.find("\"identity\""), 50); };
    NS_CHECK(id(a.out) == id(b.out), "identity changed: " + a.out + " / " + b.out);
    return "";
  });
  EXPECT_EQ(failure, "");
}

INSTANTIATE_TEST_SUITE_P(
    All, GenerationsNs,
    ::testing::Values(Generation{"7.11", "run", "elastic-agent-9b2fec", {"downloads", "install"}},
                      Generation{"7.13", "container", "elastic-agent-aaaaaa", {"downloads"}},
                      Generation{"7.15", "container", "elastic-agent-bbbbbb", {"downloads", "install"}},
                      Generation{"8.6", "container", "elastic-agent-cccccc", {"components"}},
                      Generation{"8.6", "run", "elastic-agent-8.13.0-abc123", {"components"}}),
    [](const auto& param_info) {
      std::string n = std::string(param_info.param.name) + "_" + param_info.param.mode;
      for (auto& c : n) c = c == '.' ? '_' : c;
      return n + (std::string(param_info.param.vh).find("8.13") != std::string::npos ? "_813_installed" : "");
    });

class Generation713Ns : public GenerationsNs {};

// The failure agent-init fixes, reproduced: 7.13 without agent-init installs
// onto the noexec volume and cannot execute it (cloud-on-k8s#4428).
TEST_P(Generation713Ns, WithoutAgentInitFailsWithEacces) {
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    RunResult bare = Agent(false);
    NS_CHECK(bare.status != 0, "7.13 without agent-init worked on a noexec volume: " + bare.out);
    NS_CHECK(Contains(bare.out, "fork/exec " + t_ / "state/data/install/") &&
                 Contains(bare.out, "permission denied"),
             bare.out);
    return "";
  });
  EXPECT_EQ(failure, "");
}

INSTANTIATE_TEST_SUITE_P(Only, Generation713Ns,
                         ::testing::Values(Generation{
                             "7.13", "container", "elastic-agent-aaaaaa", {"downloads"}}));

// readOnlyRootFilesystem: the image is read-only and mounting is not
// permitted. The init container seeds an emptyDir; the main container
// mounts it at HOME/data and runs with nothing written to the image.
TEST_P(Generation713Ns, ReadOnlyRootWithSeededData) {
  test::MakeDirs(t_ / "seed");
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountNoexecVolume(); !e.empty()) return e;
    std::string home = t_ / "home", seed = t_ / "seed";
    NS_CHECK(::mount("tmpfs", seed.c_str(), "tmpfs", 0, "mode=0755") == 0, "emptyDir");
    NS_CHECK(::mount(home.c_str(), home.c_str(), nullptr, MS_BIND, nullptr) == 0, "bind home");
    NS_CHECK(::mount(nullptr, home.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) == 0,
             "ro home");
    // Without the copy: a clear 73 (the 7.x state layout needs VH/install).
    RunResult ro = AgentInit({"--home", home, "--state", t_ / "state", "--layout", "state", "prepare"});
    NS_CHECK(ro.status == 73,
             "read-only root without a copy: exit " + std::to_string(ro.status) + " " + ro.err);
    NS_CHECK(Contains(ro.err, "Read-only file system"), ro.err);
    // The init container.
    RunResult seeded = AgentInit(
        {"--home", home, "--state", t_ / "state", "--layout", "state", "prepare", "--seed-data", seed});
    NS_CHECK(seeded.status == 0, "seed: " + seeded.err);
    // The main container: the copy at HOME/data, nothing written to the image.
    NS_CHECK(::mount(seed.c_str(), (home + "/data").c_str(), nullptr, MS_BIND, nullptr) == 0,
             "mount the copy");
    NS_CHECK(test::DropSysAdmin(), "drop CAP_SYS_ADMIN");  // an unprivileged main container
    RunResult agent = Agent(true);
    NS_CHECK(agent.status == 0, "agent: " + agent.out + agent.err);
    NS_CHECK(Contains(agent.out, "\"install_ok\":true,\"exec_ok\":true"), agent.out);
    return "";
  });
  EXPECT_EQ(failure, "");
}

}  // namespace
}  // namespace agent_init
