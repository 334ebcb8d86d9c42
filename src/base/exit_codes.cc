#include "base/exit_codes.h"

namespace agent_init {

int ExitCodeFor(Kind kind) noexcept {
  for (const ExitCode& e : kExitCodes) {
    if (e.kind == kind) return e.code;
  }
  return 73;  // not reached: every Kind has a row (a unit test checks)
}

std::string ExitCodeHelp(size_t width) {
  constexpr std::string_view kIndent = "       ";  // "  127  " ("  128+N " is one wider)
  std::string out = "Exit codes (before the command runs; after it, the status is the command's own):";
  for (const ExitCode& e : kExitCodes) {
    std::string code = ExitCodeText(e);
    std::string line = "  " + code + std::string(code.size() < 5 ? 5 - code.size() : 1, ' ');
    size_t start = line.size();
    std::string_view rest = e.meaning;
    while (!rest.empty()) {
      size_t space = rest.find(' ');
      std::string word(rest.substr(0, space));
      rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
      std::erase(word, '`');
      if (line.size() > start && line.size() + 1 + word.size() > width) {
        out += "\n" + line;
        line = std::string(kIndent);
        start = line.size();
      }
      if (line.size() > start) line += ' ';
      line += word;
    }
    out += "\n" + line;
  }
  return out;
}

}  // namespace agent_init
