// The command line is a contract (README, issue #3): these tests run the
// real binary.
#include <cstdio>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "binary.h"
#include "home_fixture.h"
#include "temp_dir.h"
#include "version.h"

namespace agent_init {
namespace {

using test::AgentInit;
using test::Contains;
using test::RunResult;

TEST(Cli, HelpListsModesOptionsEnvironmentAndExitCodes) {
  RunResult r = AgentInit({"--help"});
  EXPECT_EQ(r.status, 0);
  for (const char* s : {"prepare",
                        "inspect",
                        "--home",
                        "AGENT_INIT_HOME",
                        "--state",
                        "AGENT_INIT_STATE",
                        "--versioned-home",
                        "AGENT_INIT_VERSIONED_HOME",
                        "--method",
                        "AGENT_INIT_METHOD",
                        "--log-format",
                        "AGENT_INIT_LOG_FORMAT",
                        "--log-level",
                        "AGENT_INIT_LOG_LEVEL",
                        "64",
                        "65",
                        "73",
                        "75",
                        "77",
                        "126",
                        "127"}) {
    EXPECT_TRUE(Contains(r.out, s)) << "help lacks " << s << "\n" << r.out;
  }
}

// Three lines: the version, the commit, the libmount it runs with.
TEST(Cli, VersionNamesTheCommitAndLibmount) {
  RunResult r = AgentInit({"--version"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(
      std::regex_match(r.out, std::regex("agent-init " AGENT_INIT_VERSION "\ncommit " AGENT_INIT_COMMIT
                                         "\nlibmount 2\\.[0-9.]+ \\((shared library|static, from "
                                         "util-linux [^)]+)\\)\n")))
      << r.out;
  EXPECT_TRUE(std::regex_match(std::string(AGENT_INIT_COMMIT), std::regex("[0-9a-f]{12}|unknown")))
      << AGENT_INIT_COMMIT;
}

TEST(Cli, UsageErrorsAre64) {
  EXPECT_EQ(AgentInit({}).status, 64);
  EXPECT_EQ(AgentInit({"--bogus"}).status, 64);
  EXPECT_EQ(AgentInit({"--method", "nope", "prepare"}).status, 64);
  EXPECT_EQ(AgentInit({"prepare", "extra"}).status, 64);
  EXPECT_EQ(AgentInit({"--versioned-home", "../x", "prepare"}).status, 64);
  EXPECT_EQ(AgentInit({"--log-format", "xml", "prepare"}).status, 64);
  EXPECT_EQ(AgentInit({"prepare"}, {"AGENT_INIT_METHOD=nope"}).status, 64);
  // An empty user is a mistake, not "stay root": on the command line and in
  // the environment (which CLI11 alone would pass over).
  for (auto [args, env] :
       {std::pair{std::vector<std::string>{"--user", "", "prepare"}, std::vector<std::string>{}},
        std::pair{std::vector<std::string>{"prepare"}, std::vector<std::string>{"AGENT_INIT_USER="}}}) {
    RunResult r = AgentInit(args, env);
    EXPECT_EQ(r.status, 64) << r.err;
    EXPECT_NE(r.err.find("--user is empty"), std::string::npos) << r.err;
  }
}

class CliHome : public ::testing::Test {
 protected:
  void SetUp() override {
    test::Make711Home(t_ / "home");
    test::MakeDirs(t_ / "state");
  }
  std::vector<std::string> Base() {
    return {"--home", t_ / "home", "--state", t_ / "state", "--method", "symlink"};
  }
  std::vector<std::string> With(std::vector<std::string> more) {
    auto args = Base();
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  test::TempDir t_;
};

// Issue #3, done when: the 7.11.1 image is named by its home symlink.
// The options of agent-init's own that --help lists (not the modes'), with a
// value (`with_value`: a value shows as its type, TEXT or INT, or its
// choices, a|b|c) or without one.
std::set<std::string> OptionsInHelp(bool with_value) {
  RunResult r = AgentInit({"--help"});
  std::set<std::string> out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Subcommands:")) break;
    if (!line.starts_with("  --")) continue;
    std::istringstream words(line);
    std::string name, next;
    words >> name >> next;
    // Choices: a|b|c at the start (before "=default").
    std::string lead = next.substr(0, next.find_first_not_of("abcdefghijklmnopqrstuvwxyz|"));
    bool choices = lead.find('|') != std::string::npos && !lead.starts_with('|');
    if ((next.starts_with("TEXT") || next.starts_with("INT") || choices) == with_value) out.insert(name);
  }
  return out;
}
std::set<std::string> ValueOptionsInHelp() { return OptionsInHelp(true); }

// --layout auto reads commands that run agent-init itself (image/
// layout_decision.cc) with the option list of the command line's own
// definition: every option --help shows with a value has its value skipped.
TEST_F(CliHome, EveryValueOptionIsSkippedWhenReadingACommandThatRunsAgentInit) {
  std::set<std::string> options = ValueOptionsInHelp();
  EXPECT_EQ(options.size(), 12u);
  for (const std::string& opt : options) {
    RunResult r =
        AgentInit(With({"inspect", "--json", "--", "agent-init", opt, "x", "elastic-agent", "container"}));
    EXPECT_TRUE(Contains(r.out, "\"layout\":\"state\"")) << opt << ": " << r.out;
  }
}

// The other side of the same list: a flag takes no value, so the word after
// it is the program (agent-init's option table says which options take one).
TEST_F(CliHome, NoFlagSkipsTheWordAfterItWhenReadingACommandThatRunsAgentInit) {
  std::set<std::string> flags = OptionsInHelp(false);
  EXPECT_EQ(flags, (std::set<std::string>{"--signal-group", "--supervise", "--version"}));
  for (const std::string& flag : flags) {
    RunResult r =
        AgentInit(With({"inspect", "--json", "--", "agent-init", flag, "elastic-agent", "container"}));
    EXPECT_TRUE(Contains(r.out, "\"layout\":\"state\"")) << flag << ": " << r.out;
  }
}

TEST_F(CliHome, InspectJsonOn7111Image) {
  RunResult r = AgentInit({"--home", t_ / "home", "--state", t_ / "state", "inspect", "--json"});
  EXPECT_TRUE(Contains(r.out, "\"versioned_home\":\"" + t_ / "home/data/elastic-agent-9b2fec\"")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\"versioned_home_evidence\":\"home-symlink\"")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\"candidates\":[\"elastic-agent-9b2fec\"]")) << r.out;
  for (const char* key : {"\"home\":", "\"data\":", "\"state\":", "\"state_run\":", "\"method\":",
                          "\"prepared\":false", "\"mounts\":[", "\"problems\":["}) {
    EXPECT_TRUE(Contains(r.out, key)) << key << " missing in " << r.out;
  }
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one JSON object on one line";
}

TEST_F(CliHome, InspectReadsEnvironmentAndChangesNothing) {
  std::string before = test::TreeDigest(t_.path());
  RunResult r =
      AgentInit({"inspect"}, {"AGENT_INIT_HOME=" + t_ / "home", "AGENT_INIT_STATE=" + t_ / "state"});
  EXPECT_TRUE(Contains(r.out, "elastic-agent-9b2fec (by home-symlink)")) << r.out << r.err;
  EXPECT_EQ(test::TreeDigest(t_.path()), before);
}

TEST_F(CliHome, InspectJsonFromTheEnvironment) {
  RunResult r = AgentInit({"--home", t_ / "home", "--state", t_ / "state", "inspect"}, {"AGENT_INIT_JSON=1"});
  EXPECT_TRUE(r.out.starts_with("{\"home\":")) << r.out;
}

// HOME/data may be a symlink to a copy elsewhere (the operator's choice):
// inspect follows it for the mount report too, as prepare does.
TEST_F(CliHome, InspectFollowsASymlinkedDataDirectory) {
  ASSERT_EQ(::rename((t_ / "home/data").c_str(), (t_ / "data-copy").c_str()), 0);
  test::Symlink(t_ / "data-copy", t_ / "home/data");
  RunResult r = AgentInit({"--home", t_ / "home", "--state", t_ / "state", "inspect", "--json"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "\"versioned_home\":\"" + t_ / "home/data/elastic-agent-9b2fec\"")) << r.out;
  EXPECT_TRUE(Contains(r.out, "{\"role\":\"versioned_home\"")) << r.out;
  EXPECT_TRUE(Contains(r.out, "{\"role\":\"install\"")) << r.out;
}

TEST_F(CliHome, InspectExits65OnProblems) {
  test::Symlink(t_ / "home/data/elastic-agent-0af676/elastic-agent", t_ / "home/elastic-agent.new");
  ::rename((t_ / "home/elastic-agent.new").c_str(), (t_ / "home/elastic-agent").c_str());
  RunResult r = AgentInit({"--home", t_ / "home", "--state", t_ / "state", "inspect", "--json"});
  EXPECT_EQ(r.status, 65);
  EXPECT_TRUE(Contains(r.out, "\"versioned_home\":null")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\"code\":\"layout\"")) << r.out;
}

TEST_F(CliHome, PrepareThenExecRunsTheCommandWithItsArguments) {
  RunResult r = AgentInit(With({"/bin/echo", "--home", "x"}));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "--home x\n") << "options after the command belong to the command";
  EXPECT_TRUE(test::IsSymlink(t_ / "home/data/elastic-agent-9b2fec/run"));
}

TEST_F(CliHome, AFlagBeforeAnOptionWithAValue) {
  RunResult r = AgentInit(With({"--supervise", "--grace", "1", "/bin/echo", "supervised"}));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "supervised\n");
}

TEST_F(CliHome, BadSignalMapIsAUsageErrorBeforeAnythingIsTouched) {
  RunResult r = AgentInit(With({"--supervise", "--signal-map", "TERM:NOPE", "--", "/bin/true"}));
  EXPECT_EQ(r.status, 64);
  EXPECT_TRUE(Contains(r.err, "TERM:NOPE")) << r.err;
  EXPECT_FALSE(test::Exists(t_ / "state/run"));
  EXPECT_EQ(AgentInit(With({"--signal-map", "KILL:TERM", "prepare"})).status, 64);
  EXPECT_EQ(AgentInit(With({"prepare"}), {"AGENT_INIT_SIGNAL_MAP=TERM:QUIT,HUP:RTMIN+3"}).status, 0);
  EXPECT_EQ(AgentInit(With({"prepare"}), {"AGENT_INIT_SIGNAL_MAP=HUP:0,WINCH:IGN"}).status, 0);
  RunResult reserved = AgentInit(With({"--supervise", "--signal-map", "32:TERM", "--", "/bin/true"}));
  EXPECT_EQ(reserved.status, 64);
  EXPECT_TRUE(Contains(reserved.err, "32 is reserved by the C library")) << reserved.err;
  EXPECT_TRUE(Contains(reserved.err, "1-31 and SIGRTMIN..SIGRTMAX")) << reserved.err;
}

TEST_F(CliHome, DoubleDashSeparatesAModeNamedCommand) {
  RunResult r = AgentInit(With({"--", "prepare"}), {"PATH=/nonexistent"});
  EXPECT_EQ(r.status, 127) << r.err;
  EXPECT_TRUE(Contains(r.err, "prepare")) << r.err;
}

// The modes are added to the parser only when the arguments name one: a
// mode's own option in front of a command is still refused, and a mode's
// name as an option's value still parses as that value.
TEST_F(CliHome, AModesOptionBeforeACommandIsAUsageError) {
  for (const char* opt : {"--json", "--remove-snapshots", "--seed-data=/tmp"}) {
    RunResult r = AgentInit(With({opt, "--", "/bin/true"}));
    EXPECT_EQ(r.status, 64) << opt << ": " << r.err;
    EXPECT_TRUE(Contains(r.err, "Run 'agent-init --help'")) << r.err;
  }
  RunResult valued = AgentInit(With({"--versioned-home", "prepare", "--", "/bin/true"}));
  EXPECT_EQ(valued.status, 65) << valued.err;  // HOME/data/prepare does not exist
  EXPECT_TRUE(Contains(valued.err, "prepare")) << valued.err;
}

TEST_F(CliHome, CommandNotFoundIs127AndNotExecutableIs126) {
  EXPECT_EQ(AgentInit(With({"--", t_ / "missing"})).status, 127);
  test::WriteFile(t_ / "plain", "data", 0644);
  RunResult r = AgentInit(With({"--", t_ / "plain"}));
  EXPECT_EQ(r.status, 126);
  EXPECT_TRUE(Contains(r.err, t_ / "plain")) << r.err;
}

// Under --supervise the same failures come back to main and are reported
// once, like any failure before the command runs.
TEST_F(CliHome, SupervisedCommandThatCannotRunIsReportedOnceWithItsCode) {
  RunResult missing = AgentInit(With({"--supervise", "--", t_ / "missing"}));
  EXPECT_EQ(missing.status, 127);
  EXPECT_TRUE(Contains(missing.err, "exit_code=127")) << missing.err;
  EXPECT_TRUE(Contains(missing.err, t_ / "missing")) << missing.err;
  test::WriteFile(t_ / "plain", "data", 0644);
  RunResult plain = AgentInit(With({"--supervise", "--", t_ / "plain"}));
  EXPECT_EQ(plain.status, 126);
  EXPECT_TRUE(Contains(plain.err, "exit_code=126")) << plain.err;
  size_t first = plain.err.find("error:");
  EXPECT_EQ(plain.err.find("error:", first + 1), std::string::npos) << "one error line: " << plain.err;
}

TEST_F(CliHome, PrepareExitsZeroAndIsIdempotent) {
  EXPECT_EQ(AgentInit(With({"prepare"})).status, 0);
  RunResult again = AgentInit(With({"prepare"}));
  EXPECT_EQ(again.status, 0);
  EXPECT_TRUE(Contains(again.err, "already in place")) << again.err;
}

TEST_F(CliHome, JsonLogsAreOneObjectPerLine) {
  RunResult r = AgentInit(With({"--log-format", "json", "prepare"}));
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_FALSE(r.err.empty());
  size_t start = 0;
  while (start < r.err.size()) {
    size_t nl = r.err.find('\n', start);
    std::string line = r.err.substr(start, nl - start);
    EXPECT_EQ(line.front(), '{') << line;
    EXPECT_EQ(line.back(), '}') << line;
    EXPECT_TRUE(Contains(line, "\"time\":\"")) << line;
    EXPECT_TRUE(Contains(line, "\"level\":\"")) << line;
    EXPECT_TRUE(Contains(line, "\"message\":\"")) << line;
    start = nl + 1;
  }
}

TEST_F(CliHome, MissingStateIs73WithTheFix) {
  RunResult r = AgentInit({"--home", t_ / "home", "--state", t_ / "nostate", "prepare"});
  EXPECT_EQ(r.status, 73);
  EXPECT_TRUE(Contains(r.err, t_ / "nostate")) << r.err;
  EXPECT_TRUE(Contains(r.err, "mount the persistent volume")) << r.err;
}

TEST_F(CliHome, SymlinkedStateRunIsRefusedWith77) {
  test::MakeDirs(t_ / "outside");
  test::Symlink(t_ / "outside", t_ / "state/run");
  RunResult r = AgentInit(With({"prepare"}));
  EXPECT_EQ(r.status, 77);
  EXPECT_TRUE(Contains(r.err, "symlink")) << r.err;
  EXPECT_EQ(test::TreeDigest(t_ / "outside"), "");
}

}  // namespace
}  // namespace agent_init
