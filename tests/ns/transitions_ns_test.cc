// Upgrades (and a rollback) that an operator really makes, on one volume,
// with agent-sim standing in for the agent: the image changes, the layout
// may change with it (7.10 - 7.12 keep the run state in VH/run, 7.13+ under
// STATE_PATH), and the agent's identity and its components' state must
// arrive where the new agent reads them, byte for byte.
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

struct Image {
  const char* generation;  // AGENT_SIM_GENERATION
  const char* mode;        // run or container
  const char* vh;
  std::vector<std::string> dirs;
};

struct Transition {
  const char* name;
  Image from, to;
};

// The value of `key` in agent-sim's one line of JSON (strings only).
std::string JsonString(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\":\"");
  if (at == std::string::npos) return "";
  at += key.size() + 4;
  return json.substr(at, json.find('"', at) - at);
}

// Images made from agent-sim, and one volume.
class ImagesNs : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_MOUNT_NAMESPACE();
    test::MakeDirs(t_ / "state");
  }
  void MakeImage(const Image& image) {
    test::MakeSimHome(Home(image), image.vh, image.dirs, AGENT_SIM_BINARY);
  }
  std::string Home(const Image& image) { return t_ / (std::string("image-") + image.vh); }
  std::string Generation(const Image& image) {
    return std::string("AGENT_SIM_GENERATION=") + image.generation;
  }
  // One container start: agent-init in front of the image's agent.
  RunResult Start(const Image& image) {
    return AgentInit(
        {"--home", Home(image), "--state", t_ / "state", "--", Home(image) + "/elastic-agent", image.mode},
        {Generation(image)});
  }
  // The agent alone, as the image runs it with the volume at STATE_PATH.
  RunResult Alone(const Image& image) {
    return test::Run({Home(image) + "/elastic-agent", image.mode},
                     {Generation(image), "STATE_PATH=" + t_ / "state"});
  }
  std::string MountVolume() {
    if (::mount("tmpfs", (t_ / "state").c_str(), "tmpfs", MS_NOEXEC, "mode=0755") < 0)
      return std::string("tmpfs: ") + std::strerror(errno);
    return "";
  }
  test::TempDir t_;
};

class TransitionsNs : public ImagesNs, public ::testing::WithParamInterface<Transition> {
 protected:
  void SetUp() override {
    ImagesNs::SetUp();
    MakeImage(GetParam().from);
    MakeImage(GetParam().to);
  }
};

TEST_P(TransitionsNs, IdentityAndComponentStateArriveIntact) {
  const Transition& tr = GetParam();
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountVolume(); !e.empty()) return e;
    RunResult a = Start(tr.from);
    NS_CHECK(a.status == 0 && Contains(a.out, "\"starts\":1"), "first image: " + a.out + a.err);
    const std::string id = JsonString(a.out, "identity"), run_a = JsonString(a.out, "run_dir");
    NS_CHECK(!id.empty() && !run_a.empty(), a.out);
    // A component's state, as a registry would keep it.
    const std::string registry = "offsets " + std::string(100000, 'r') + " end";
    test::WriteFile(run_a + "/log-default/registry/filebeat/log.json", registry);
    const std::string before = test::TreeDigest(run_a);

    RunResult b = Start(tr.to);
    NS_CHECK(b.status == 0, "after the image change: " + b.out + b.err);
    const std::string run_b = JsonString(b.out, "run_dir");
    NS_CHECK(JsonString(b.out, "identity") == id,
             "identity lost: was " + id + ", now " + JsonString(b.out, "identity") + "\n" + b.err);
    NS_CHECK(Contains(b.out, "\"starts\":2"), "the start count did not carry over: " + b.out);
    NS_CHECK(test::ReadFile(run_b + "/log-default/registry/filebeat/log.json") == registry,
             "component state changed");
    // Everything the first agent left, byte for byte, but the start count
    // the second one incremented.
    auto without_starts = [](std::string digest) {
      size_t at = digest.find("starts ");
      if (at != std::string::npos) digest.erase(at, digest.find('\n', at) - at + 1);
      return digest;
    };
    NS_CHECK(without_starts(test::TreeDigest(run_b)) == without_starts(before),
             "the run state differs:\n--- before\n" + before + "--- after\n" + test::TreeDigest(run_b));
    if (std::string(tr.from.mode) != tr.to.mode) {
      NS_CHECK(Contains(b.err, "carrying the agent's state over"), b.err);
      NS_CHECK(!test::Exists(t_ / (std::string(tr.from.mode) == "run" ? "state/run" : "state/data/run")),
               "the old layout's run directory is gone");
    }
    RunResult c = Start(tr.to);
    NS_CHECK(c.status == 0 && Contains(c.out, "\"starts\":3") && JsonString(c.out, "identity") == id,
             "the next start: " + c.out + c.err);
    NS_CHECK(!Contains(c.err, "carrying"), "nothing to carry over twice: " + c.err);
    return "";
  });
  EXPECT_EQ(failure, "");
}

const Image k711{"7.11", "run", "elastic-agent-9b2fec", {"downloads", "install"}};
const Image k712{"7.11", "run", "elastic-agent-121212", {"downloads", "install"}};
const Image k715{"7.15", "container", "elastic-agent-bbbbbb", {"downloads", "install"}};
const Image k86{"8.6", "container", "elastic-agent-cccccc", {"components"}};
const Image k813{"8.6", "container", "elastic-agent-8.13.0-abc123", {"components"}};

INSTANTIATE_TEST_SUITE_P(Upgrades, TransitionsNs,
                         ::testing::Values(Transition{"v7_11_to_7_15", k711, k715},
                                           Transition{"v7_12_to_8_6", k712, k86},
                                           Transition{"v8_6_to_8_13_installed_home", k86, k813},
                                           Transition{"rollback_7_15_to_7_12", k715, k712}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// The way out: a 7.11 volume upgraded to 8.6 with agent-init, then
// ejected; the agent started alone (the volume at STATE_PATH) keeps its
// identity and state. Snapshots stay unless asked.
class EjectNs : public ImagesNs {};

TEST_F(EjectNs, LeavesAVolumeTheAgentUsesAlone) {
  for (bool remove_snapshots : {false, true}) {
    SCOPED_TRACE(remove_snapshots ? "--remove-snapshots" : "snapshots kept");
    test::Shell("rm -rf " + t_ / "image-*");
    MakeImage(k711);
    MakeImage(k86);
    std::string failure = InMountNamespace([&]() -> std::string {
      if (auto e = MountVolume(); !e.empty()) return e;
      RunResult a = Start(k711);
      NS_CHECK(a.status == 0, "7.11: " + a.out + a.err);
      const std::string id = JsonString(a.out, "identity");
      test::WriteFile(JsonString(a.out, "run_dir") + "/log-default/registry", "offsets");
      RunResult b = Start(k86);
      NS_CHECK(b.status == 0 && JsonString(b.out, "identity") == id, "8.6 with agent-init: " + b.out + b.err);
      // The 7.11 container is gone, and its mounts (its home on the volume) with it.
      ::umount2(Home(k711).c_str(), MNT_DETACH);

      // Not for an image whose own mode loses the state: 65, nothing changed.
      RunResult refused = AgentInit({"--home", Home(k711), "--state", t_ / "state", "eject", "--",
                                     Home(k711) + "/elastic-agent", "run"});
      NS_CHECK(refused.status == 65, "eject for 7.11: exit " + std::to_string(refused.status) + refused.err);
      NS_CHECK(Contains(refused.err, "elastic-agent run") && Contains(refused.err, "lost"), refused.err);
      NS_CHECK(test::Exists(t_ / "state/.agent-init/history"), "the refusal changed nothing");

      std::vector<std::string> args{"--home", Home(k86), "--state", t_ / "state", "eject"};
      if (remove_snapshots) args.push_back("--remove-snapshots");
      args.insert(args.end(), {"--", Home(k86) + "/elastic-agent", "container"});
      RunResult out = AgentInit(args);
      NS_CHECK(out.status == 0, "eject: " + out.out + out.err);
      NS_CHECK(Contains(out.out, "STATE_PATH") && Contains(out.out, "remove the agent-init"),
               "prints the manifest change: " + out.out);
      NS_CHECK(
          !test::Exists(t_ / "state/.agent-init/history") && !test::Exists(t_ / "state/.agent-init/lock"),
          "the bookkeeping is gone");
      NS_CHECK(test::Exists(t_ / "state/.agent-init/snapshots") != remove_snapshots,
               "snapshots kept unless asked");
      NS_CHECK(remove_snapshots != Contains(out.out, "Kept: "), out.out);

      RunResult alone = Alone(k86);
      NS_CHECK(alone.status == 0, "the agent alone: " + alone.out);
      NS_CHECK(JsonString(alone.out, "identity") == id, "identity lost after eject: " + alone.out);
      NS_CHECK(Contains(alone.out, "\"starts\":3"), alone.out);
      NS_CHECK(test::ReadFile(t_ / "state/data/run/log-default/registry") == "offsets", "component state");
      return "";
    });
    EXPECT_EQ(failure, "");
  }
}

// ECK's CONFIG_PATH (the image's home): agent-init kept the identity on the
// volume; eject leaves it where the agent alone finds it with CONFIG_PATH
// unset, and says that CONFIG_PATH must go from the manifest.
TEST_F(EjectNs, LeavesTheIdentityWhereTheAgentFindsItWithoutConfigPath) {
  MakeImage(k86);
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = MountVolume(); !e.empty()) return e;
    const std::string config = "CONFIG_PATH=" + Home(k86);
    RunResult a = AgentInit({"--home", Home(k86), "--state", t_ / "state", "--", Home(k86) + "/elastic-agent",
                             "container"},
                            {Generation(k86), config});
    NS_CHECK(a.status == 0, "8.6 with agent-init: " + a.out + a.err);
    const std::string id = JsonString(a.out, "identity"), key = JsonString(a.out, "vault_key");
    RunResult out = AgentInit({"--home", Home(k86), "--state", t_ / "state", "eject", "--",
                               Home(k86) + "/elastic-agent", "container"},
                              {config});
    NS_CHECK(out.status == 0, "eject: " + out.out + out.err);
    NS_CHECK(Contains(out.out, "leave CONFIG_PATH unset") && Contains(out.out, "CONFIG_PATH is " + Home(k86)),
             "names CONFIG_PATH: " + out.out);
    RunResult alone = Alone(k86);
    NS_CHECK(alone.status == 0, "the agent alone: " + alone.out);
    NS_CHECK(JsonString(alone.out, "identity") == id && JsonString(alone.out, "vault_key") == key,
             "identity lost after eject: " + a.out + " / " + alone.out);
    return "";
  });
  EXPECT_EQ(failure, "");
}

}  // namespace
}  // namespace agent_init
