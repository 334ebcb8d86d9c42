// The agent's identity across recreations of its container, in every
// generation and configuration the agent is deployed with, with agent-sim
// keeping its files where the real agent does (tests/fixtures/agent-sim:
// 7.x's fleet.yml two levels above its binary, 8.x's fleet.enc and vault/ in
// CONFIG_PATH, each save a NAME.tmp renamed over NAME).
//
// A "container" is a fresh copy of the image (its writable layer starts as
// the image), a new mount namespace, and the volume (a host directory that
// outlives them) bind-mounted noexec at STATE; without CAP_SYS_ADMIN for the
// symlink method. Three containers in turn must report the same agent ID
// (and for 8.3+ the same vault key), and Fleet agents one enrolment in all.
//
// Every case runs a second time with agent-init's placement of the agent's
// files turned off (AGENT_INIT_TEST_WITHOUT_IDENTITY, test builds only),
// where the identity must be lost: the assertions can fail, and it is
// agent-init, not the stand-in, that keeps the identity.
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include <gtest/gtest.h>

#include "binary.h"
#include "home_fixture.h"
#include "namespace.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

using test::Contains;
using test::InMountNamespace;
using test::RunResult;

// A field of agent-sim's report (strings and scalars).
std::string Field(const std::string& out, const std::string& key) {
  size_t at = out.rfind("\"" + key + "\":");
  if (at == std::string::npos) return "";
  at += key.size() + 3;
  if (out[at] == '"') return out.substr(at + 1, out.find('"', at + 1) - at - 1);
  return out.substr(at, out.find_first_of(",}", at) - at);
}

struct Case {
  const char* name;
  const char* generation;                   // AGENT_SIM_GENERATION
  std::vector<std::string> vh_dirs;         // downloads/install (7.x) or components (8.6+)
  bool sys_admin;                           // mount permission: the bind method
  std::vector<std::string> agent_init;      // agent-init's own options
  std::vector<std::string> command;         // after --; @HOME@ and @BIN@ replaced
  std::vector<std::string> env;             // @HOME@ replaced
  std::vector<std::string> first_command{};  // the first container's command, when it differs
  bool fleet = false;                       // a Fleet agent: managed, enrolled once
  bool non_root = false;                    // agent-init as 1000 on an 8.12+ home and a volume of 1000's
  bool policy_kept = false;                 // a Fleet agent's action store survives (the last policy)
};

class IdentityNs : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    REQUIRE_MOUNT_NAMESPACE();
    ::chmod(t_.path().c_str(), 0755);
    const Case& c = GetParam();
    test::MakeSimHome(t_ / "image", "elastic-agent-9b2fec", c.vh_dirs, AGENT_SIM_BINARY);
    // A relative home symlink: the copies of the image stay intact.
    ::unlink((t_ / "image/elastic-agent").c_str());
    test::Symlink("data/elastic-agent-9b2fec/elastic-agent", t_ / "image/elastic-agent");
    test::MakeDirs(t_ / "image/config");  // another directory of the image, for CONFIG_PATH
    // Elastic's 7.10 - 7.12 entrypoint: enrol at every start with
    // FLEET_ENROLL=1, then run (beats 239f243834 docker-entrypoint.elastic-agent.tmpl:66-72).
    test::WriteFile(t_ / "bin/docker-entrypoint",
                    "#!/bin/sh\nset -e\nif [ \"${FLEET_ENROLL:-}\" = 1 ]; then\n  " + Home() +
                        "/elastic-agent enroll -f --url=http://fleet.invalid:8220 --enrollment-token=t\nfi\nexec " +
                        Home() + "/elastic-agent run \"$@\"\n",
                    0755);
    test::MakeDirs(t_ / "volume", 0755);
    test::MakeDirs(t_ / "state", 0755);
    test::MakeDirs(t_ / "fleet", 0777);
    if (c.non_root) {
      ASSERT_EQ(test::Shell("chown -R -h 1000:1000 " + t_ / "image" + " " + t_ / "volume" + " " + t_ / "fleet"), 0);
    }
  }
  std::string Home() { return t_ / "home"; }
  std::string Expand(std::string s) {
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"@HOME@", Home()}, {"@BIN@", t_ / "bin"}}) {
      for (size_t at; (at = s.find(from)) != std::string::npos;) s.replace(at, from.size(), to);
    }
    return s;
  }

  // Runs `body` (agent-init, in a container's mount namespace) and brings
  // its result out of the namespace's process.
  RunResult InContainer(const std::function<std::string(RunResult&)>& body) {
    std::string failure = InMountNamespace([&]() -> std::string {
      RunResult got;
      if (auto e = body(got); !e.empty()) return e;
      std::ofstream(t_ / "last.out") << got.out;
      std::ofstream(t_ / "last.err") << got.err;
      std::ofstream(t_ / "last.status") << got.status;
      return "";
    });
    if (!failure.empty()) return {-1, "", failure};
    return {std::stoi(test::ReadFile(t_ / "last.status")), test::ReadFile(t_ / "last.out"),
            test::ReadFile(t_ / "last.err")};
  }

  // One container: the image copied afresh, a new mount namespace, the
  // volume, agent-init in front of the agent.
  RunResult Container(const std::vector<std::string>& command, const std::vector<std::string>& extra_env) {
    const Case& c = GetParam();
    if (test::Shell("rm -rf " + Home() + " && cp -a " + t_ / "image " + Home()) != 0) return {-1, "", "copy image"};
    std::vector<std::string> args{"--home", Home(), "--state", t_ / "state"};
    args.insert(args.end(), c.agent_init.begin(), c.agent_init.end());
    args.push_back("--");
    for (const auto& a : command) args.push_back(Expand(a));
    std::vector<std::string> env{std::string("AGENT_SIM_GENERATION=") + c.generation,
                                 "AGENT_SIM_FLEET=" + t_ / "fleet"};
    for (const auto& e : c.env) env.push_back(Expand(e));
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    return InContainer([&](RunResult& got) -> std::string {
      const std::string state = t_ / "state", volume = t_ / "volume";
      NS_CHECK(::mount(volume.c_str(), state.c_str(), nullptr, MS_BIND, nullptr) == 0, "bind the volume");
      NS_CHECK(::mount(nullptr, state.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_NOEXEC, nullptr) == 0,
               "noexec");
      if (!c.sys_admin) NS_CHECK(test::DropSysAdmin(), "drop CAP_SYS_ADMIN");
      got = c.non_root ? test::AgentInitAs({1000, 1000, {1000}}, args, env) : test::AgentInit(args, env);
      return "";
    });
  }

  // Three containers in turn; the reports.
  std::vector<RunResult> ThreeContainers(const std::vector<std::string>& extra_env) {
    const Case& c = GetParam();
    std::vector<RunResult> out;
    for (int i = 0; i < 3; ++i) {
      const auto& command = i == 0 && !c.first_command.empty() ? c.first_command : c.command;
      out.push_back(Container(command, extra_env));
    }
    return out;
  }

  size_t Enrolments() {
    std::istringstream in(test::ReadFile(t_ / "fleet/agents"));
    size_t n = 0;
    for (std::string line; std::getline(in, line);) n += !line.empty();
    return n;
  }

  test::TempDir t_;
};

TEST_P(IdentityNs, TheAgentIdSurvivesRecreation) {
  const Case& c = GetParam();
  auto starts = ThreeContainers({});
  for (size_t i = 0; i < starts.size(); ++i) {
    ASSERT_EQ(starts[i].status, 0) << "container " << i + 1 << ":\n" << starts[i].out << starts[i].err;
  }
  const std::string id = Field(starts[0].out, "identity");
  ASSERT_FALSE(id.empty()) << starts[0].out;
  for (size_t i = 1; i < starts.size(); ++i) {
    EXPECT_EQ(Field(starts[i].out, "identity"), id) << "container " << i + 1 << ":\n" << starts[i].out << starts[i].err;
    EXPECT_EQ(Field(starts[i].out, "vault_key"), Field(starts[0].out, "vault_key")) << starts[i].out;
    EXPECT_EQ(Field(starts[i].out, "starts"), std::to_string(i + 1)) << "component state: " << starts[i].out;
  }
  if (std::string(c.generation) >= "8") {
    EXPECT_FALSE(Field(starts[0].out, "vault_key").empty());
  }
  if (c.fleet) {
    for (const auto& s : starts) EXPECT_EQ(Field(s.out, "managed"), "true") << s.out << s.err;
    EXPECT_EQ(Enrolments(), 1u) << "one enrolment in all: " << test::ReadFile(t_ / "fleet/agents");
    // The action store in Home: on the volume for `container`, in the
    // versioned home for `run`, where only --supervise keeps it.
    EXPECT_EQ(Field(starts[2].out, "policy"), c.policy_kept ? "3" : "1") << starts[2].out;
  }
}

// The same containers with agent-init's placement of the agent's files
// turned off: the identity is lost (or the agent cannot even start).
TEST_P(IdentityNs, WithoutThePlacementTheAgentIdIsLost) {
  auto starts = ThreeContainers({"AGENT_INIT_TEST_WITHOUT_IDENTITY=1"});
  const std::string id = Field(starts[0].out, "identity");
  bool lost = id.empty();
  for (size_t i = 1; i < starts.size(); ++i) lost = lost || starts[i].status != 0 || Field(starts[i].out, "identity") != id;
  EXPECT_TRUE(lost) << "the identity survived without agent-init's placement: the test proves nothing\n"
                    << starts[2].out << starts[2].err;
}

const std::vector<std::string> k7x{"downloads", "install"};
const std::vector<std::string> k8x{"components"};
const std::vector<std::string> kRun{"@HOME@/elastic-agent", "run"};
const std::vector<std::string> kContainer{"@HOME@/elastic-agent", "container"};
// An enrolment made by hand in the first container (`docker exec ... enroll`),
// then the agent: later containers start without FLEET_ENROLL.
const std::vector<std::string> kEnrolByHand{
    "/bin/sh", "-c",
    "@HOME@/elastic-agent enroll -f --url=http://fleet.invalid:8220 --enrollment-token=t && exec "
    "@HOME@/elastic-agent run"};

INSTANTIATE_TEST_SUITE_P(
    All, IdentityNs,
    ::testing::Values(
        // 7.10 - 7.12, `elastic-agent run`: fleet.yml in HOME, beside data/.
        Case{"v7_11_standalone_bind", "7.11", k7x, true, {}, kRun, {}},
        Case{"v7_11_standalone_symlink_supervised", "7.11", k7x, false, {"--supervise"}, kRun, {}},
        Case{"v7_11_fleet_enrolled_by_hand_bind", "7.11", k7x, true, {}, kRun, {}, kEnrolByHand, true},
        Case{"v7_11_fleet_enrolled_by_hand_symlink_supervised", "7.11", k7x, false, {"--supervise"}, kRun, {},
             kEnrolByHand, true, false, true},
        // Elastic's entrypoint with FLEET_ENROLL=1 at every start: enrolled once.
        Case{"v7_11_fleet_enroll_every_start_bind", "7.11", k7x, true, {}, {"@BIN@/docker-entrypoint"},
             {"FLEET_ENROLL=1"}, {}, true},
        // 8.3+, `elastic-agent container`: fleet.enc and vault/ in CONFIG_PATH.
        Case{"v8_6_config_path_home_eck", "8.6", k8x, false, {}, kContainer,
             {"CONFIG_PATH=@HOME@", "FLEET_ENROLL=true"}, {}, true, false, true},
        Case{"v8_6_config_path_other_image_directory", "8.6", k8x, false, {}, kContainer,
             {"CONFIG_PATH=@HOME@/config", "FLEET_ENROLL=true"}, {}, true, false, true},
        Case{"v7_13_config_path_home", "7.13", {"downloads"}, false, {}, kContainer,
             {"CONFIG_PATH=@HOME@", "FLEET_ENROLL=1"}, {}, true, false, true},
        Case{"v8_6_non_root_config_path_home", "8.6", k8x, false, {}, kContainer,
             {"CONFIG_PATH=@HOME@", "FLEET_ENROLL=true"}, {}, true, true, true}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

// --supervise copies a save onto the volume as it lands, while the agent
// runs: a container killed then (SIGKILL, a node lost) has it already. The
// test waits on the volume's own event, as agent-init waits on the image's.
class IdentitySyncNs : public IdentityNs {};

TEST_P(IdentitySyncNs, ASaveReachesTheVolumeWhileTheAgentRuns) {
  test::Shell("rm -rf " + Home() + " && cp -a " + t_ / "image " + Home());
  test::MakeDirs(t_ / "volume/home", 0770);
  std::string failure = InMountNamespace([&]() -> std::string {
    const std::string state = t_ / "state", volume = t_ / "volume";
    NS_CHECK(::mount(volume.c_str(), state.c_str(), nullptr, MS_BIND, nullptr) == 0, "bind the volume");
    NS_CHECK(test::DropSysAdmin(), "drop CAP_SYS_ADMIN");
    int in = ::inotify_init1(IN_CLOEXEC);
    NS_CHECK(in >= 0 && ::inotify_add_watch(in, (state + "/home").c_str(), IN_MOVED_TO) >= 0, "inotify");
    ::setenv("AGENT_SIM_GENERATION", "7.11", 1);
    ::setenv("AGENT_SIM_STAY", "1", 1);
    pid_t pid = test::Spawn({test::AgentInitBinary(), "--home", Home(), "--state", state, "--supervise", "--",
                             Home() + "/elastic-agent", "run"},
                            t_ / "agent.log");
    bool arrived = false;
    struct pollfd p {in, POLLIN, 0};
    while (!arrived && ::poll(&p, 1, 30000) == 1) {
      alignas(struct inotify_event) char buf[4096];
      ssize_t n = ::read(in, buf, sizeof buf);
      for (char* at = buf; n > 0 && at < buf + n;) {
        const auto* ev = reinterpret_cast<const struct inotify_event*>(at);
        arrived = arrived || (ev->len > 0 && std::string(ev->name) == "fleet.yml");
        at += sizeof(struct inotify_event) + ev->len;
      }
    }
    const std::string kept = test::ReadFile(volume + "/home/fleet.yml");
    ::kill(pid, SIGTERM);  // the agent, then agent-init, stop
    test::Wait(pid);
    NS_CHECK(arrived, "no fleet.yml reached the volume while the agent ran: " + test::ReadFile(t_ / "agent.log"));
    const std::string id = Field(test::ReadFile(t_ / "agent.log"), "identity");
    NS_CHECK(!id.empty() && Contains(kept, "id: " + id), "the volume's copy: " + kept + " / the agent's ID " + id);
    return "";
  });
  EXPECT_EQ(failure, "");
}

INSTANTIATE_TEST_SUITE_P(Only, IdentitySyncNs,
                         ::testing::Values(Case{"v7_11_standalone_symlink_supervised", "7.11", k7x, false,
                                                {"--supervise"}, kRun, {}}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// CONFIG_PATH unset: the agent keeps its identity in STATE_PATH itself, and
// agent-init must not get in the way. (Not a placement of agent-init's: no
// run without it to compare.)
class IdentityOwnNs : public IdentityNs {};

TEST_P(IdentityOwnNs, TheAgentIdSurvivesRecreation) {
  auto starts = ThreeContainers({});
  for (const auto& s : starts) ASSERT_EQ(s.status, 0) << s.out << s.err;
  for (const auto& s : starts) {
    EXPECT_EQ(Field(s.out, "identity"), Field(starts[0].out, "identity")) << s.out;
    EXPECT_EQ(Field(s.out, "vault_key"), Field(starts[0].out, "vault_key")) << s.out;
    EXPECT_EQ(Field(s.out, "config_dir"), t_ / "state") << s.out;
  }
  EXPECT_EQ(Field(starts[2].out, "policy"), "3") << starts[2].out;
  EXPECT_EQ(Enrolments(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Only, IdentityOwnNs,
                         ::testing::Values(Case{"v8_6_config_path_unset", "8.6", k8x, false, {}, kContainer,
                                                {"FLEET_ENROLL=true"}, {}, true, false, true}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// 7.x in exec mode without mount permission: nothing that ends at the exec
// can keep HOME/fleet.yml on the volume (volume/identity.h). The start goes
// on, the identity is lost, and one warning names the file and both fixes.
class IdentityLostNs : public IdentityNs {};

TEST_P(IdentityLostNs, ExecModeWithoutMountPermissionWarnsAndLosesIt) {
  auto starts = ThreeContainers({});
  for (const auto& s : starts) ASSERT_EQ(s.status, 0) << s.out << s.err;
  EXPECT_NE(Field(starts[1].out, "identity"), Field(starts[0].out, "identity")) << "the truth: a new agent ID";
  const std::string& err = starts[0].err;
  EXPECT_TRUE(Contains(err, Home() + "/{fleet.yml")) << "names the file: " << err;
  EXPECT_TRUE(Contains(err, "will not survive a recreation of the container")) << err;
  EXPECT_TRUE(Contains(err, "--supervise") && Contains(err, "mount permission")) << "names both fixes: " << err;
}

INSTANTIATE_TEST_SUITE_P(Only, IdentityLostNs,
                         ::testing::Values(Case{"v7_11_standalone_symlink_exec", "7.11", k7x, false, {}, kRun, {}}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// readOnlyRootFilesystem (8.x, ECK's CONFIG_PATH in the read-only home): in
// each pod an init container, as root, seeds an emptyDir with the image's
// data directory and hands the volume to 1000 (prepare --seed-data); the
// agent's container, as 1000 without mount permission, has the copy at
// HOME/data and a read-only root.
class IdentitySeedNs : public IdentityNs {
 protected:
  RunResult Pod(const std::vector<std::string>& extra_env) {
    if (test::Shell("rm -rf " + Home() + " " + t_ / "seed" + " && cp -a " + t_ / "image " + Home() +
                    " && mkdir -m 0755 " + t_ / "seed") != 0)
      return {-1, "", "copy image"};
    std::vector<std::string> env{"AGENT_SIM_GENERATION=8.15", "AGENT_SIM_FLEET=" + t_ / "fleet",
                                 "CONFIG_PATH=" + Home(), "FLEET_ENROLL=true"};
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    return InContainer([&](RunResult& got) -> std::string {
      const std::string state = t_ / "state", volume = t_ / "volume", seed = t_ / "seed", home = Home();
      NS_CHECK(::mount(volume.c_str(), state.c_str(), nullptr, MS_BIND, nullptr) == 0, "bind the volume");
      NS_CHECK(::mount(nullptr, state.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_NOEXEC, nullptr) == 0, "noexec");
      RunResult init = test::AgentInit(
          {"--home", home, "--state", state, "--layout", "state", "prepare", "--seed-data", seed, "--user", "1000:1000"},
          env);
      NS_CHECK(init.status == 0, "the init container: " + init.err);
      NS_CHECK(::mount(home.c_str(), home.c_str(), nullptr, MS_BIND, nullptr) == 0, "bind home");
      NS_CHECK(::mount(nullptr, home.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) == 0, "ro home");
      NS_CHECK(::mount(seed.c_str(), (home + "/data").c_str(), nullptr, MS_BIND, nullptr) == 0, "the copy at HOME/data");
      NS_CHECK(test::DropSysAdmin(), "drop CAP_SYS_ADMIN");
      got = test::AgentInitAs({1000, 1000, {1000}},
                              {"--home", home, "--state", state, "--", home + "/elastic-agent", "container"}, env);
      return "";
    });
  }
};

TEST_P(IdentitySeedNs, TheAgentIdSurvivesRecreationOnAReadOnlyRoot) {
  RunResult a = Pod({}), b = Pod({});
  ASSERT_EQ(a.status, 0) << a.out << a.err;
  ASSERT_EQ(b.status, 0) << b.out << b.err;
  EXPECT_EQ(Field(a.out, "uid"), "1000");
  EXPECT_FALSE(Field(a.out, "identity").empty());
  EXPECT_EQ(Field(b.out, "identity"), Field(a.out, "identity")) << b.out;
  EXPECT_EQ(Field(b.out, "vault_key"), Field(a.out, "vault_key")) << b.out;
  EXPECT_EQ(Field(b.out, "policy"), "2") << "the action store in STATE_PATH/data: " << b.out;
  EXPECT_EQ(Enrolments(), 1u);
}

TEST_P(IdentitySeedNs, WithoutThePlacementTheAgentCannotKeepIt) {
  RunResult a = Pod({"AGENT_INIT_TEST_WITHOUT_IDENTITY=1"}), b = Pod({"AGENT_INIT_TEST_WITHOUT_IDENTITY=1"});
  EXPECT_TRUE(a.status != 0 || b.status != 0 || Field(a.out, "identity") != Field(b.out, "identity"))
      << "kept without agent-init's placement: " << b.out;
}

// 7.10 - 7.12 save their ID in the home itself: on a read-only root without
// mount permission they cannot start. A clear 73 before the agent runs,
// naming the home and what would work.
TEST_P(IdentitySeedNs, TheRunLayoutOnAReadOnlyHomeWithoutMountPermissionIs73) {
  test::Shell("rm -rf " + Home() + " && cp -a " + t_ / "image " + Home() + " && mkdir -p " + t_ / "seed");
  std::string failure = InMountNamespace([&]() -> std::string {
    const std::string state = t_ / "state", volume = t_ / "volume", seed = t_ / "seed", home = Home();
    NS_CHECK(::mount(volume.c_str(), state.c_str(), nullptr, MS_BIND, nullptr) == 0, "bind the volume");
    RunResult init = test::AgentInit({"--home", home, "--state", state, "--layout", "run", "prepare", "--seed-data", seed});
    NS_CHECK(init.status == 0, "the init container: " + init.err);
    NS_CHECK(::mount(home.c_str(), home.c_str(), nullptr, MS_BIND, nullptr) == 0, "bind home");
    NS_CHECK(::mount(nullptr, home.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) == 0, "ro home");
    NS_CHECK(::mount(seed.c_str(), (home + "/data").c_str(), nullptr, MS_BIND, nullptr) == 0, "the copy");
    NS_CHECK(test::DropSysAdmin(), "drop CAP_SYS_ADMIN");
    RunResult r = test::AgentInit({"--home", home, "--state", state, "--", home + "/elastic-agent", "run"},
                                  {"AGENT_SIM_GENERATION=7.11"});
    NS_CHECK(r.status == 73, "exit " + std::to_string(r.status) + ": " + r.out + r.err);
    NS_CHECK(Contains(r.err, "the agent's home `" + home + "` is read-only") && Contains(r.err, "CAP_SYS_ADMIN"),
             r.err);
    NS_CHECK(!Contains(r.out, "\"generation\""), "the agent did not run: " + r.out);
    return "";
  });
  EXPECT_EQ(failure, "");
}

INSTANTIATE_TEST_SUITE_P(Only, IdentitySeedNs,
                         ::testing::Values(Case{"v8_15_seed_data_read_only_root", "8.15", k8x, false, {}, kContainer,
                                                {}, {}, true, true}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace agent_init
