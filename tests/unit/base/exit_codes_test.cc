// The exit codes are one table: ExitCodeFor, --help and README all say the
// same thing.
#include "base/exit_codes.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace agent_init {
namespace {

TEST(ExitCodes, EveryKindHasExactlyOneCode) {
  static_assert(EveryKindHasOneCode());
  EXPECT_EQ(kExitCodes.front().code, 0);
  EXPECT_EQ(ExitCodeFor(Kind::kUsage), 64);
  EXPECT_EQ(ExitCodeFor(Kind::kNotFound), 127);
}

// README's "Exit codes" table, row for row.
TEST(ExitCodes, ReadmeTableIsTheTable) {
  std::ifstream in(AGENT_INIT_SOURCE_DIR "/README.md");
  ASSERT_TRUE(in) << "README.md not found";
  std::stringstream all;
  all << in.rdbuf();
  std::string text = all.str();
  size_t at = text.find("### Exit codes");
  ASSERT_NE(at, std::string::npos);
  std::istringstream lines(text.substr(at));
  std::vector<std::pair<std::string, std::string>> readme;
  for (std::string line; std::getline(lines, line);) {
    // A row: "| CODE | MEANING |", CODE a number or "128+N".
    size_t bar = line.find(" | ");
    if (line.starts_with("| ") && line.ends_with(" |") && bar != std::string::npos && bar > 2 &&
        line.find_first_not_of("0123456789+N", 2) == bar) {
      readme.emplace_back(line.substr(2, bar - 2), line.substr(bar + 3, line.size() - bar - 5));
    }
    if (!readme.empty() && !line.starts_with("|")) break;
  }
  std::vector<std::pair<std::string, std::string>> table;
  for (const ExitCode& e : kExitCodes) table.emplace_back(ExitCodeText(e), std::string(e.meaning));
  EXPECT_EQ(readme, table);
}

TEST(ExitCodes, HelpListsEveryCodeWithItsMeaningUnwrapped) {
  std::string help = ExitCodeHelp(60);
  for (const ExitCode& e : kExitCodes) {
    EXPECT_NE(help.find("\n  " + ExitCodeText(e) + " "), std::string::npos) << help;
  }
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.find('`'), std::string::npos) << "no Markdown in --help: " << line;
  }
  // Unwrapped again, the words are the table's.
  std::string flat;
  for (size_t i = 0; i < help.size(); ++i) {
    if (help[i] == '\n' && i + 1 < help.size() && help[i + 1] == ' ') {
      while (i + 1 < help.size() && help[i + 1] == ' ') ++i;
      flat += ' ';
    } else {
      flat += help[i];
    }
  }
  EXPECT_NE(flat.find("the command was not found (named in the message)"), std::string::npos) << flat;
}

}  // namespace
}  // namespace agent_init
