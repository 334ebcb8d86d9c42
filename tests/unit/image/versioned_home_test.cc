#include "image/versioned_home.h"

#include "image/image.h"

#include <gtest/gtest.h>

#include "home_fixture.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

using test::HomeFixture;
using test::TempDir;

Discovery DiscoverAt(const std::string& home, const std::string& forced = "",
                     Listing listing = Listing::kAll) {
  OpenedImage opened = OpenImage(home, forced, listing);
  EXPECT_TRUE(opened.image.home.valid()) << opened.failure->error.msg;
  return opened.image.discovery;
}

bool HasWarningContaining(const Discovery& d, const std::string& text) {
  for (const auto& w : d.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

TEST(Discover, Image7111NamedByHomeSymlink) {
  TempDir t;
  test::Make711Home(t / "home");
  Discovery d = DiscoverAt(t / "home");
  ASSERT_FALSE(d.error) << d.error->msg;
  EXPECT_EQ(d.versioned_home, "elastic-agent-9b2fec");
  EXPECT_EQ(d.rule, Rule::kHomeSymlink);
  ASSERT_EQ(d.candidates.size(), 1u);
  EXPECT_TRUE(d.warnings.empty()) << d.warnings.front();
}

TEST(Discover, RelativeHomeSymlink) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa").VersionedHome("elastic-agent-bbbbbb");
  f.HomeSymlink("data/elastic-agent-bbbbbb/elastic-agent");
  Discovery d = DiscoverAt(f.home());
  EXPECT_EQ(d.versioned_home, "elastic-agent-bbbbbb");
  EXPECT_EQ(d.rule, Rule::kHomeSymlink);
}

TEST(Discover, OptionBeatsEverything) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa").VersionedHome("elastic-agent-bbbbbb");
  f.HomeSymlink(f.Vh("elastic-agent-bbbbbb") + "/elastic-agent");
  Discovery d = DiscoverAt(f.home(), "elastic-agent-aaaaaa");
  EXPECT_EQ(d.versioned_home, "elastic-agent-aaaaaa");
  EXPECT_EQ(d.rule, Rule::kOption);
  EXPECT_TRUE(HasWarningContaining(d, "disagrees")) << "the symlink disagrees and must be listed";
}

TEST(Discover, OptionMayNameAnyRealDirectory) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("custom-home");
  Discovery d = DiscoverAt(f.home(), "custom-home");
  ASSERT_FALSE(d.error) << d.error->msg;
  EXPECT_EQ(d.versioned_home, "custom-home");
}

TEST(Discover, OptionNamingMissingDirectoryIsBroken) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa");
  Discovery d = DiscoverAt(f.home(), "elastic-agent-cccccc");
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->kind, Kind::kLayout);
  EXPECT_NE(d.error->msg.find("elastic-agent-aaaaaa"), std::string::npos) << d.error->msg;
}

TEST(Discover, ManifestOf813) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-8.13.0-abc123").VersionedHome("elastic-agent-8.12.0-def456");
  f.File("manifest.yaml",
         "package:\n  version: 8.13.0\n  versioned-home: data/elastic-agent-8.13.0-abc123\n");
  Discovery d = DiscoverAt(f.home());
  EXPECT_EQ(d.versioned_home, "elastic-agent-8.13.0-abc123");
  EXPECT_EQ(d.rule, Rule::kManifest);
}

TEST(Discover, ActiveCommitWithTrailingNewline) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa").VersionedHome("elastic-agent-bbbbbb");
  f.File(".elastic-agent.active.commit", "bbbbbb0123456789abcdef0123456789abcdef01\n");
  Discovery d = DiscoverAt(f.home());
  EXPECT_EQ(d.versioned_home, "elastic-agent-bbbbbb");
  EXPECT_EQ(d.rule, Rule::kActiveCommit);
}

TEST(Discover, ShortActiveCommitAfterUpgrade) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa").VersionedHome("elastic-agent-bbbbbb");
  f.File(".elastic-agent.active.commit", "bbbbbb");
  f.File(".build_hash.txt", "aaaaaa0123456789abcdef0123456789abcdef01\n");
  Discovery d = DiscoverAt(f.home());
  EXPECT_EQ(d.versioned_home, "elastic-agent-bbbbbb");
  EXPECT_EQ(d.rule, Rule::kActiveCommit);
  // .build_hash.txt is stale after an in-place upgrade: a warning, not an error.
  EXPECT_TRUE(HasWarningContaining(d, ".build_hash.txt"));
}

TEST(Discover, BuildHashAlone) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa").VersionedHome("elastic-agent-bbbbbb");
  f.File(".build_hash.txt", "aaaaaa0123456789abcdef0123456789abcdef01");
  Discovery d = DiscoverAt(f.home());
  EXPECT_EQ(d.versioned_home, "elastic-agent-aaaaaa");
  EXPECT_EQ(d.rule, Rule::kBuildHash);
}

TEST(Discover, CommitMatchesVersionedName) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-8.13.0-abc123").VersionedHome("elastic-agent-8.12.0-def456");
  f.File(".elastic-agent.active.commit", "abc123\n");
  Discovery d = DiscoverAt(f.home());
  EXPECT_EQ(d.versioned_home, "elastic-agent-8.13.0-abc123");
}

TEST(Discover, OnlyCandidate) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-abcdef");
  Discovery d = DiscoverAt(f.home());
  EXPECT_EQ(d.versioned_home, "elastic-agent-abcdef");
  EXPECT_EQ(d.rule, Rule::kOnlyCandidate);
}

TEST(Discover, SeveralCandidatesAndNoEvidenceIsAmbiguous) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa").VersionedHome("elastic-agent-bbbbbb");
  Discovery d = DiscoverAt(f.home());
  ASSERT_TRUE(d.error);
  EXPECT_EQ(ExitCodeFor(d.error->kind), 65);
  EXPECT_NE(d.error->msg.find("elastic-agent-aaaaaa, elastic-agent-bbbbbb"), std::string::npos)
      << d.error->msg;
}

TEST(Discover, NoCandidate) {
  TempDir t;
  test::MakeDirs(t / "home/data/tmp");
  Discovery d = DiscoverAt(t / "home");
  ASSERT_TRUE(d.error);
  EXPECT_EQ(ExitCodeFor(d.error->kind), 65);
}

TEST(Discover, MissingDataDirectory) {
  TempDir t;
  test::MakeDirs(t / "home");
  Discovery d = DiscoverAt(t / "home");
  ASSERT_TRUE(d.error);
  EXPECT_EQ(ExitCodeFor(d.error->kind), 65);
  EXPECT_NE(d.error->hint.find("--home"), std::string::npos);
}

// The state a quick double upgrade leaves behind (elastic-agent#2706): the
// home symlink points at a versioned home that the cleanup removed.
TEST(Discover, BrokenHomeSymlinkAfterDoubleUpgrade) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-8ecdff");
  f.HomeSymlink(f.Vh("elastic-agent-0af676") + "/elastic-agent");
  Discovery d = DiscoverAt(f.home());
  ASSERT_TRUE(d.error) << "must never skip silently to the weaker evidence";
  EXPECT_EQ(ExitCodeFor(d.error->kind), 65);
  EXPECT_NE(d.error->msg.find("elastic-agent-0af676"), std::string::npos) << d.error->msg;
  EXPECT_NE(d.error->msg.find("elastic-agent-8ecdff"), std::string::npos) << d.error->msg;
  EXPECT_NE(d.error->msg.find(f.Path("elastic-agent")), std::string::npos) << d.error->msg;
}

TEST(Discover, ActiveCommitNamingMissingHomeIsBroken) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-8ecdff");
  f.File(".elastic-agent.active.commit", "0af676");
  Discovery d = DiscoverAt(f.home());
  ASSERT_TRUE(d.error);
  EXPECT_NE(d.error->msg.find("0af676"), std::string::npos) << d.error->msg;
}

TEST(Discover, ManifestNamingMissingHomeIsBroken) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-8ecdff");
  f.File("manifest.yaml", "package:\n  versioned-home: data/elastic-agent-0af676\n");
  Discovery d = DiscoverAt(f.home());
  ASSERT_TRUE(d.error);
  EXPECT_NE(d.error->msg.find("manifest.yaml"), std::string::npos) << d.error->msg;
}

TEST(Discover, SymlinkCandidateIsNotAVersionedHome) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa");
  test::MakeDirs(t / "elsewhere");
  test::Symlink(t / "elsewhere", f.Vh("elastic-agent-bbbbbb"));
  Discovery d = DiscoverAt(f.home());
  EXPECT_EQ(d.versioned_home, "elastic-agent-aaaaaa");
  EXPECT_EQ(d.candidates.size(), 1u);
  EXPECT_TRUE(HasWarningContaining(d, "elastic-agent-bbbbbb"));
}

TEST(Discover, HomeSymlinkToSymlinkedCandidateIsBroken) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa");
  test::MakeDirs(t / "elsewhere");
  test::Symlink(t / "elsewhere", f.Vh("elastic-agent-bbbbbb"));
  f.HomeSymlink(f.Vh("elastic-agent-bbbbbb") + "/elastic-agent");
  Discovery d = DiscoverAt(f.home());
  ASSERT_TRUE(d.error) << "a candidate must be a real directory inside data";
}

TEST(Discover, HomeSymlinkOutsideDataIsOnlyAWarning) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa");
  f.HomeSymlink("/usr/bin/true");
  Discovery d = DiscoverAt(f.home());
  EXPECT_EQ(d.versioned_home, "elastic-agent-aaaaaa");
  EXPECT_TRUE(HasWarningContaining(d, "not into a versioned home"));
}

TEST(Discover, DisagreeingWeakerEvidenceIsListed) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa").VersionedHome("elastic-agent-bbbbbb");
  f.HomeSymlink(f.Vh("elastic-agent-aaaaaa") + "/elastic-agent");
  f.File("manifest.yaml", "package:\n  versioned-home: data/elastic-agent-bbbbbb\n");
  Discovery d = DiscoverAt(f.home());
  EXPECT_EQ(d.versioned_home, "elastic-agent-aaaaaa");
  EXPECT_TRUE(HasWarningContaining(d, "manifest.yaml"));
}

TEST(Discover, GarbageCommitFileIsIgnoredWithWarning) {
  TempDir t;
  HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa");
  f.File(".elastic-agent.active.commit", "garbage!");
  Discovery d = DiscoverAt(f.home());
  EXPECT_EQ(d.versioned_home, "elastic-agent-aaaaaa");
  EXPECT_TRUE(HasWarningContaining(d, "does not hold a commit"));
}

}  // namespace
}  // namespace agent_init

namespace agent_init {
namespace {

// The restart path does not list HOME/data when strong evidence names a
// directory that exists; everything else behaves as with the full listing.
TEST(DiscoverWhenNeeded, StrongEvidenceSkipsTheListing) {
  test::TempDir t;
  test::HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa").VersionedHome("elastic-agent-bbbbbb");
  f.HomeSymlink(f.Vh("elastic-agent-bbbbbb") + "/elastic-agent");
  f.File(".build_hash.txt", "aaaaaa0123456789abcdef0123456789abcdef01\n");
  Discovery d = DiscoverAt(f.home(), "", Listing::kWhenNeeded);
  ASSERT_FALSE(d.error);
  EXPECT_EQ(d.versioned_home, "elastic-agent-bbbbbb");
  EXPECT_EQ(d.candidates.size(), 1u) << "only the decided one was looked at";
  EXPECT_TRUE(HasWarningContaining(d, ".build_hash.txt")) << "disagreement still reported";
}

TEST(DiscoverWhenNeeded, BrokenSymlinkFallsBackToTheFullListing) {
  test::TempDir t;
  test::HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-8ecdff");
  f.HomeSymlink(f.Vh("elastic-agent-0af676") + "/elastic-agent");
  Discovery d = DiscoverAt(f.home(), "", Listing::kWhenNeeded);
  ASSERT_TRUE(d.error);
  EXPECT_NE(d.error->msg.find("elastic-agent-8ecdff"), std::string::npos)
      << "lists what exists: " << d.error->msg;
}

TEST(DiscoverWhenNeeded, WeakEvidenceListsAsBefore) {
  test::TempDir t;
  test::HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa").VersionedHome("elastic-agent-bbbbbb");
  f.File(".elastic-agent.active.commit", "bbbbbb\n");
  Discovery d = DiscoverAt(f.home(), "", Listing::kWhenNeeded);
  EXPECT_EQ(d.versioned_home, "elastic-agent-bbbbbb");
  EXPECT_EQ(d.candidates.size(), 2u);
}

}  // namespace
}  // namespace agent_init
