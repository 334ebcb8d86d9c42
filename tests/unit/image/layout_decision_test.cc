#include "image/layout_decision.h"

#include <gtest/gtest.h>

#include "home_fixture.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

// The shape of the real entrypoints (elastic/beats, x-pack/elastic-agent).
constexpr const char* kEntrypoint713 =
    "#!/bin/bash\n"
    "set -eo pipefail\n"
    "# For information on the possible environment variables that can be passed into the container. Run the\n"
    "# following command for information on the options that are available.\n"
    "#\n"
    "# `./elastic-agent container --help`\n"
    "#\n"
    "\n"
    "elastic-agent container \"$@\"\n";
constexpr const char* kEntrypoint711 =
    "#!/bin/bash\n"
    "set -euo pipefail\n"
    "# elastic-agent container would be wrong here\n"
    "exec elastic-agent run \"$@\"\n";

TEST(Generation, EntrypointScripts) {
  EXPECT_EQ(LayoutFromScript(kEntrypoint713), Layout::kState);
  EXPECT_EQ(LayoutFromScript(kEntrypoint711), Layout::kRun);
  EXPECT_EQ(LayoutFromScript("#!/bin/sh\nexec /usr/share/elastic-agent/elastic-agent container -e\n"),
            Layout::kState);
  EXPECT_FALSE(LayoutFromScript("#!/bin/sh\n# elastic-agent container\nexec something-else\n"));
  EXPECT_FALSE(LayoutFromScript(""));
}

TEST(Generation, CommandsThroughWrappers) {
  std::string evidence;
  auto no_files = [](const std::string&) { return std::string(); };
  EXPECT_EQ(LayoutFromCommand({"elastic-agent", "container"}, no_files, {}, evidence), Layout::kState);
  EXPECT_EQ(
      LayoutFromCommand({"/usr/share/elastic-agent/elastic-agent", "run", "-e"}, no_files, {}, evidence),
      Layout::kRun);
  EXPECT_EQ(
      LayoutFromCommand({"/usr/bin/tini", "-s", "--", "elastic-agent", "container"}, no_files, {}, evidence),
      Layout::kState);
  EXPECT_EQ(LayoutFromCommand({"dumb-init", "elastic-agent", "run"}, no_files, {}, evidence), Layout::kRun);
  // Wrapper options that take a value are not the program.
  EXPECT_EQ(LayoutFromCommand({"dumb-init", "--rewrite", "15:3", "elastic-agent", "container"}, no_files, {},
                              evidence),
            Layout::kState);
  EXPECT_EQ(LayoutFromCommand({"tini", "-e", "143", "-p", "SIGKILL", "--", "elastic-agent", "container"},
                              no_files, {}, evidence),
            Layout::kState);
  EXPECT_EQ(LayoutFromCommand({"agent-init", "--user", "1000", "--", "elastic-agent", "container"}, no_files,
                              {"user"}, evidence),
            Layout::kState);
  EXPECT_EQ(LayoutFromCommand({"/bin/sh", "-c", "exec elastic-agent container"}, no_files, {}, evidence),
            Layout::kState);
  EXPECT_FALSE(LayoutFromCommand({"/bin/true"}, no_files, {}, evidence));
  EXPECT_FALSE(LayoutFromCommand({"elastic-agent", "version"}, no_files, {}, evidence));
}

TEST(Generation, EntrypointScriptBehindTini) {
  std::string evidence;
  auto files = [](const std::string& path) {
    return path == "/usr/local/bin/docker-entrypoint" ? std::string(kEntrypoint713) : std::string();
  };
  auto l =
      LayoutFromCommand({"/usr/bin/tini", "--", "/usr/local/bin/docker-entrypoint"}, files, {}, evidence);
  EXPECT_EQ(l, Layout::kState);
  EXPECT_NE(evidence.find("docker-entrypoint"), std::string::npos) << evidence;
}

struct GenCase {
  const char* name;
  std::vector<std::string> dirs;
  Generation want;
};

TEST(Generation, FromTheVersionedHome) {
  const GenCase cases[] = {
      {"elastic-agent-9b2fec", {"downloads", "install", "run"}, Generation::kV1},  // 7.11
      {"elastic-agent-aaaaaa", {"downloads"}, Generation::kV1},                    // 7.13, 7.15 image
      {"elastic-agent-bbbbbb", {"components"}, Generation::kV2},                   // 8.6+
      {"elastic-agent-8.13.0-abc123", {"components", "run"}, Generation::kV2},     // 8.13 installed
      {"elastic-agent-cccccc", {"run"}, Generation::kUnknown},
  };
  for (const auto& c : cases) {
    test::TempDir t;
    test::HomeFixture f(t / "home");
    f.VersionedHome(c.name, c.dirs);
    auto vh = Dir::OpenTrusted(f.Vh(c.name));
    std::string evidence;
    EXPECT_EQ(GenerationOf(*vh, evidence), c.want) << c.name << ": " << evidence;
  }
}

TEST(Generation, DecisionFollowsTheOptionFirst) {
  test::TempDir t;
  test::HomeFixture f(t / "home");
  f.VersionedHome("elastic-agent-aaaaaa", {"components"});
  auto vh = Dir::OpenTrusted(f.Vh("elastic-agent-aaaaaa"));
  EXPECT_EQ(DecideLayout(LayoutOption::kRun, {"elastic-agent", "container"}, {}, *vh).layout, Layout::kRun);
  EXPECT_EQ(DecideLayout(LayoutOption::kState, {"elastic-agent", "run"}, {}, *vh).layout, Layout::kState);
  LayoutDecision d = DecideLayout(LayoutOption::kAuto, {"elastic-agent", "container"}, {}, *vh);
  EXPECT_EQ(d.layout, Layout::kState);
  EXPECT_EQ(d.generation, Generation::kV2);
  test::WriteFile(t / "entrypoint", kEntrypoint713, 0755);
  EXPECT_EQ(
      DecideLayout(LayoutOption::kAuto, {}, {}, *vh, GenerationLookup::kWhenNeeded, t / "entrypoint").layout,
      Layout::kState)
      << "without a command (prepare) the image's entrypoint decides";
  EXPECT_EQ(DecideLayout(LayoutOption::kAuto, {}, {}, *vh, GenerationLookup::kWhenNeeded, t / "none").layout,
            Layout::kRun);
}

}  // namespace
}  // namespace agent_init
