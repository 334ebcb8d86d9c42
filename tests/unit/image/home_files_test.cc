#include "image/home_files.h"

#include <gtest/gtest.h>

namespace agent_init {
namespace {

TEST(VersionedHomeName, LegacyName) {
  auto n = ParseVersionedHomeName("elastic-agent-9b2fec");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->hash, "9b2fec");
  EXPECT_EQ(n->version, "");
}

TEST(VersionedHomeName, VersionedNames813) {
  auto n = ParseVersionedHomeName("elastic-agent-8.13.0-abc123");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->version, "8.13.0");
  EXPECT_EQ(n->hash, "abc123");
  auto snap = ParseVersionedHomeName("elastic-agent-8.13.0-SNAPSHOT-15658b");
  ASSERT_TRUE(snap);
  EXPECT_EQ(snap->version, "8.13.0-SNAPSHOT");
  EXPECT_EQ(snap->hash, "15658b");
}

TEST(VersionedHomeName, RejectsLookalikes) {
  for (const char* bad : {"elastic-agent-9B2FEC", "elastic-agent-9b2fe", "elastic-agent-9b2fec0",
                          "elastic-agent-", "elastic-agent", "tmp", "elastic-agent-8.13-abc123",
                          "elastic-agent-8.13.0--abc123", "elastic-agent-x.1.0-abc123",
                          "elastic-agent-8.13.0-abc12g", "elastic-agent-8.13.0-SNAP SHOT-abc123"}) {
    EXPECT_FALSE(ParseVersionedHomeName(bad)) << bad;
  }
}

TEST(CommitHash, FullCommitWithAndWithoutNewline) {
  EXPECT_EQ(ParseCommitHash("9b2fec7a1b2c3d4e5f60718293a4b5c6d7e8f901\n"), "9b2fec");
  EXPECT_EQ(ParseCommitHash("9b2fec7a1b2c3d4e5f60718293a4b5c6d7e8f901"), "9b2fec");
  EXPECT_EQ(ParseCommitHash("9b2fec7a1b2c3d4e5f60718293a4b5c6d7e8f901\r\n"), "9b2fec");
}

TEST(CommitHash, SixCharactersOnlyAsAfterAnUpgrade) {
  EXPECT_EQ(ParseCommitHash("8ecdff"), "8ecdff");
  EXPECT_EQ(ParseCommitHash("8ecdff\n"), "8ecdff");
  EXPECT_EQ(ParseCommitHash("  8ECDFF \n"), "8ecdff");
}

TEST(CommitHash, RejectsGarbage) {
  EXPECT_FALSE(ParseCommitHash(""));
  EXPECT_FALSE(ParseCommitHash("\n"));
  EXPECT_FALSE(ParseCommitHash("abc"));
  EXPECT_FALSE(ParseCommitHash("not-a-commit"));
  EXPECT_FALSE(ParseCommitHash("8ecdff 12"));
}

TEST(Manifest, ReadsPackageVersionedHome) {
  const char* yaml =
      "version: co.elastic.agent/v1\n"
      "kind: PackageManifest\n"
      "package:\n"
      "  version: 8.13.0\n"
      "  snapshot: false\n"
      "  hash: abc1234567890\n"
      "  versioned-home: data/elastic-agent-8.13.0-abc123\n"
      "  path-mappings:\n"
      "    - data/elastic-agent-abc123: data/elastic-agent-8.13.0-abc123\n";
  EXPECT_EQ(ParseManifestVersionedHome(yaml), "elastic-agent-8.13.0-abc123");
}

TEST(Manifest, QuotesCommentsAndCrlf) {
  EXPECT_EQ(ParseManifestVersionedHome("package:\r\n  versioned-home: \"data/elastic-agent-abc123\"\r\n"),
            "elastic-agent-abc123");
  EXPECT_EQ(ParseManifestVersionedHome("package:\n  versioned-home: 'data/elastic-agent-abc123' # x\n"),
            "elastic-agent-abc123");
  EXPECT_EQ(
      ParseManifestVersionedHome("# c\npackage: # c\n\n    versioned-home: data/elastic-agent-abc123 # c\n"),
      "elastic-agent-abc123");
}

TEST(Manifest, IgnoresKeysOutsidePackageAndDeeperLevels) {
  EXPECT_FALSE(ParseManifestVersionedHome("versioned-home: data/elastic-agent-abc123\n"));
  EXPECT_FALSE(ParseManifestVersionedHome("other:\n  versioned-home: data/elastic-agent-abc123\n"));
  EXPECT_FALSE(ParseManifestVersionedHome(
      "package:\n  version: 1\n  nested:\n    versioned-home: data/elastic-agent-abc123\n"));
  EXPECT_FALSE(ParseManifestVersionedHome("packages:\n  versioned-home: data/elastic-agent-abc123\n"));
}

TEST(Manifest, RejectsValuesThatEscapeData) {
  EXPECT_FALSE(ParseManifestVersionedHome("package:\n  versioned-home: /etc\n"));
  EXPECT_FALSE(ParseManifestVersionedHome("package:\n  versioned-home: data/../../etc\n"));
  EXPECT_FALSE(ParseManifestVersionedHome("package:\n  versioned-home: data/\n"));
  EXPECT_FALSE(ParseManifestVersionedHome("package:\n  versioned-home: data/..\n"));
  EXPECT_FALSE(ParseManifestVersionedHome("package:\n  versioned-home: \"data/x\n"));
}

}  // namespace
}  // namespace agent_init
