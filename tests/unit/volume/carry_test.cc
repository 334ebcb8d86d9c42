#include "volume/carry.h"

#include <gtest/gtest.h>

#include <optional>

#include "temp_dir.h"

namespace agent_init {
namespace {

struct CarryFixture {
  test::TempDir t;
  std::optional<Dir> image;
  std::optional<Volume> volume;
  CarryFixture() {
    test::MakeDirs(t / "image");
    test::MakeDirs(t / "state");
  }
  void Open() {
    image.emplace(*Dir::OpenTrusted(t / "image"));
    volume.emplace(Volume::Open(t / "state").value());
    volume->MakeBookkeeping().value();
  }
  std::vector<const AgentFile*> Config() {
    std::vector<const AgentFile*> out;
    for (const AgentFile* f : AgentFilesFor(Layout::kState)) {
      if (f->dir == AgentDir::kConfig) out.push_back(f);
    }
    return out;
  }
};

// An older start's fleet.enc and its vault/ arrive together, and only
// where the volume has no identity yet.
TEST(CarryAgentFiles, TheIdentityMovesAsOneUnit) {
  CarryFixture f;
  test::WriteFile(f.t / "image/fleet.enc", "enc");
  test::WriteFile(f.t / "image/vault/.seed", "seed");
  test::WriteFile(f.t / "image/vault/key", "key");
  test::WriteFile(f.t / "image/elastic-agent.yml", "fleet:\n  enabled: true\n");
  f.Open();
  auto carried = CarryAgentFiles(*f.volume, *f.image, std::nullopt, "", f.Config(), /*move=*/true);
  ASSERT_TRUE(carried) << carried.error().msg;
  EXPECT_TRUE(*carried);
  EXPECT_EQ(test::ReadFile(f.t / "state/fleet.enc"), "enc");
  EXPECT_EQ(test::ReadFile(f.t / "state/vault/key"), "key");
  EXPECT_EQ(test::ReadFile(f.t / "state/elastic-agent.yml"), "fleet:\n  enabled: true\n");
  EXPECT_FALSE(test::Exists(f.t / "image/fleet.enc")) << "moved";
  EXPECT_FALSE(test::Exists(f.t / "image/vault"));
  EXPECT_TRUE(test::Exists(f.t / "image/elastic-agent.yml")) << "the image's configuration stays";
  EXPECT_FALSE(test::Exists(f.t / "state/.agent-init/journal"));
  EXPECT_FALSE(test::Exists(f.t / "state/.agent-init/carry"));
}

// The volume's identity is the agent's: another agent's fleet.enc never
// lands beside its vault/, nor its vault beside the volume's fleet.enc.
TEST(CarryAgentFiles, TheVolumesIdentityWins) {
  CarryFixture f;
  test::WriteFile(f.t / "image/fleet.enc", "image-enc");
  test::WriteFile(f.t / "image/vault/key", "image-key");
  test::WriteFile(f.t / "state/fleet.enc", "volume-enc");
  f.Open();
  auto carried = CarryAgentFiles(*f.volume, *f.image, std::nullopt, "", f.Config(), /*move=*/true);
  ASSERT_TRUE(carried) << carried.error().msg;
  EXPECT_FALSE(*carried);
  EXPECT_EQ(test::ReadFile(f.t / "state/fleet.enc"), "volume-enc");
  EXPECT_FALSE(test::Exists(f.t / "state/vault")) << "no vault of another agent";
  EXPECT_EQ(test::ReadFile(f.t / "image/fleet.enc"), "image-enc") << "left where it was";
}

// elastic-agent.yml is the agent's only once enrolment wrote it; before,
// it is the image's configuration, which the agent copies itself.
TEST(CarryAgentFiles, AnUnenrolledConfigurationStaysWithTheImage) {
  CarryFixture f;
  test::WriteFile(f.t / "image/elastic-agent.yml", "outputs: {}\n");
  f.Open();
  auto carried = CarryAgentFiles(*f.volume, *f.image, std::nullopt, "", f.Config(), /*move=*/false);
  ASSERT_TRUE(carried) << carried.error().msg;
  EXPECT_FALSE(*carried);
  EXPECT_FALSE(test::Exists(f.t / "state/elastic-agent.yml"));
}

TEST(CarryAgentFiles, EnrolledConfigurations) {
  EXPECT_TRUE(IsEnrolledConfig("fleet:\n  enabled: true\n"));
  EXPECT_TRUE(IsEnrolledConfig("# from enrol\nfleet:\n  enabled:   true\n"));
  EXPECT_FALSE(IsEnrolledConfig("fleet:\n  enabled: false\n"));
  EXPECT_FALSE(IsEnrolledConfig("outputs:\n  default: {}\n"));
  EXPECT_FALSE(IsEnrolledConfig("nofleet:\n  enabled: true\n"));
}

// A move within the volume (a layout change) is one journaled change: a
// crash after the copies were published is finished by recovery, the
// originals removed.
TEST(CarryAgentFiles, RecoveryFinishesAPublishAndRemovesTheOriginalsWithinTheVolume) {
  CarryFixture f;
  test::WriteFile(f.t / "state/home/fleet.yml", "id: A\n");
  test::WriteFile(f.t / "state/.agent-init/carry/fleet.yml", "id: A\n");
  test::WriteFile(f.t / "state/.agent-init/journal",
                  EncodeIntent({kOpCarry, "identity", "publish",
                                {{"carry-into", ""}, {"carry-names", "fleet.yml"}, {"carry-move", "1"},
                                 {"carry-from", "home"}}}));
  f.Open();
  auto intent = f.volume->journal().Read();
  ASSERT_TRUE(intent && *intent) << "a valid journal";
  ASSERT_TRUE(ResumeCarry(**intent, *f.volume));
  EXPECT_EQ(test::ReadFile(f.t / "state/fleet.yml"), "id: A\n");
  EXPECT_FALSE(test::Exists(f.t / "state/home/fleet.yml"));
  EXPECT_FALSE(test::Exists(f.t / "state/.agent-init/journal"));
}

// The journal is on the untrusted volume: a carry names only the agent's
// files and the four carry places.
TEST(CarryAgentFiles, TheJournalNamesOnlyTheAgentsFilesAndPlaces) {
  auto decode = [](const Record& args) { return DecodeIntent(EncodeIntent({kOpCarry, "identity", "publish", args})); };
  EXPECT_TRUE(decode({{"carry-into", "home"}, {"carry-names", "fleet.enc/vault"}}));
  EXPECT_FALSE(decode({{"carry-into", "home"}, {"carry-names", "shadow"}}));
  EXPECT_FALSE(decode({{"carry-into", "../etc"}, {"carry-names", "fleet.yml"}}));
  EXPECT_FALSE(decode({{"carry-from", "/etc"}, {"carry-names", "fleet.yml"}}));
  EXPECT_FALSE(decode({{"carry-move", "yes"}}));
}

}  // namespace
}  // namespace agent_init
