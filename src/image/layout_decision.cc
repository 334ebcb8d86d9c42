#include "image/layout_decision.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/enum_names.h"
#include "process/exec.h"

namespace agent_init {
namespace {

std::string Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool IsInit(const std::string& base) {
  return base == "tini" || base == "tini-static" || base == "dumb-init" || base == "catatonit" ||
         base == "agent-init";
}

// Options of the init wrappers that take the next word as their value.
bool TakesValue(const std::string& wrapper, const std::string& opt,
                const std::vector<std::string_view>& agent_init_options) {
  if (wrapper == "tini" || wrapper == "tini-static") return opt == "-p" || opt == "-e";
  if (wrapper == "dumb-init") return opt == "-r" || opt == "--rewrite";
  if (wrapper == "agent-init") {
    if (!opt.starts_with("--")) return false;
    std::string_view name = std::string_view(opt).substr(2);
    return std::find(agent_init_options.begin(), agent_init_options.end(), name) != agent_init_options.end();
  }
  return false;  // catatonit's options take no value
}

bool IsShell(const std::string& base) {
  return base == "sh" || base == "bash" || base == "dash" || base == "ash";
}

std::vector<std::string> Words(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ' ' || c == '\t' || c == ';' || c == '&' || c == '|' || c == '"' || c == '\'' || c == '(' ||
        c == ')') {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// The start of a script (up to 64 KiB); empty for anything that does not
// begin with "#!", which costs one small read for the agent's own binary.
std::string ReadScript(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return {};
  struct stat st;
  std::string out;
  char magic[2];
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::read(fd, magic, 2) == 2 && magic[0] == '#' &&
      magic[1] == '!') {
    out.resize(64 * 1024);
    std::memcpy(out.data(), magic, 2);
    ssize_t n = ::read(fd, out.data() + 2, out.size() - 2);
    out.resize(2 + (n > 0 ? static_cast<size_t>(n) : 0));
  }
  ::close(fd);
  return out;
}

}  // namespace

std::string_view GenerationName(Generation g) {
  static constexpr EnumName<Generation> kNames[] = {
      {Generation::kUnknown, "unknown"},
      {Generation::kV1, "v1 (7.x - 8.5)"},
      {Generation::kV2, "v2 (8.6+)"},
  };
  return NameOf(g, kNames);
}

std::optional<Layout> LayoutFromScript(std::string_view script) {
  std::optional<Layout> found;
  while (!script.empty()) {
    size_t nl = script.find('\n');
    std::string_view line = script.substr(0, nl);
    script = nl == std::string_view::npos ? std::string_view{} : script.substr(nl + 1);
    size_t hash = line.find('#');
    if (hash != std::string_view::npos && (hash == 0 || line[hash - 1] == ' ' || line[hash - 1] == '\t')) {
      line = line.substr(0, hash);
    }
    auto words = Words(line);
    for (size_t i = 0; i + 1 < words.size(); ++i) {
      if (Basename(words[i]) != "elastic-agent") continue;
      if (words[i + 1] == "container") found = Layout::kState;
      if (words[i + 1] == "run") found = Layout::kRun;
    }
  }
  return found;
}

std::optional<Layout> LayoutFromCommand(const std::vector<std::string>& command, const FileReader& read,
                                        const std::vector<std::string_view>& value_options,
                                        std::string& evidence) {
  size_t i = 0;
  // Init wrappers in front: tini -s -- PROGRAM, dumb-init --rewrite 15:3 PROGRAM
  while (i < command.size() && IsInit(Basename(command[i]))) {
    std::string wrapper = Basename(command[i++]);
    while (i < command.size() && command[i].starts_with('-')) {
      const std::string& opt = command[i++];
      if (opt == "--") break;
      if (opt.find('=') == std::string::npos && TakesValue(wrapper, opt, value_options)) ++i;
    }
  }
  if (i >= command.size()) return std::nullopt;
  const std::string& program = command[i];
  std::string base = Basename(program);
  if (base == "elastic-agent") {
    if (i + 1 < command.size() && command[i + 1] == "container") {
      evidence = "the command runs `elastic-agent container`";
      return Layout::kState;
    }
    if (i + 1 < command.size() && command[i + 1] == "run") {
      evidence = "the command runs `elastic-agent run`";
      return Layout::kRun;
    }
    return std::nullopt;
  }
  if (IsShell(base) && i + 2 < command.size() && command[i + 1] == "-c") {
    auto l = LayoutFromScript(command[i + 2]);
    if (l)
      evidence = "the command's shell line runs `elastic-agent " +
                 std::string(l == Layout::kState ? "container" : "run") + "`";
    return l;
  }
  auto resolved = ResolveCommand(program);
  std::string path = resolved ? *resolved : program;
  std::string text = read(path);
  if (!text.starts_with("#!")) return std::nullopt;
  auto l = LayoutFromScript(text);
  if (l) {
    evidence = "the entrypoint script " + Q(path) + " runs `elastic-agent " +
               std::string(l == Layout::kState ? "container" : "run") + "`";
  }
  return l;
}

Generation GenerationOf(const Dir& vh, std::string& evidence) {
  auto is_dir = [&](const char* name) {
    auto st = vh.Stat(name);
    return st && *st && S_ISDIR((*st)->stx_mode);
  };
  if (is_dir("components")) {
    evidence = Q(vh.PathOf("components")) + " exists";
    return Generation::kV2;
  }
  for (const char* name : {"install", "downloads"}) {
    if (is_dir(name)) {
      evidence = Q(vh.PathOf(name)) + " exists, " + Q(vh.PathOf("components")) + " does not";
      return Generation::kV1;
    }
  }
  evidence = "neither components, install nor downloads in " + Q(vh.path());
  return Generation::kUnknown;
}

LayoutDecision DecideLayout(LayoutOption option, const std::vector<std::string>& command,
                            const std::vector<std::string_view>& value_options, const Dir& vh,
                            GenerationLookup generation, const std::string& default_entrypoint) {
  LayoutDecision d;
  if (option == LayoutOption::kRun || option == LayoutOption::kState) {
    d.layout = option == LayoutOption::kState ? Layout::kState : Layout::kRun;
    d.evidence = option == LayoutOption::kState ? "--layout state" : "--layout run";
  } else {
    std::vector<std::string> what = command.empty() ? std::vector<std::string>{default_entrypoint} : command;
    auto l = LayoutFromCommand(what, ReadScript, value_options, d.evidence);
    d.layout = l.value_or(Layout::kRun);
    if (!l) {
      d.evidence = command.empty()
                       ? "no command and no entrypoint that names `elastic-agent container`; run layout"
                       : "the command does not run `elastic-agent container`; run layout";
    }
  }
  if (d.layout == Layout::kState || generation == GenerationLookup::kAlways) {
    d.generation = GenerationOf(vh, d.generation_evidence);
  }
  return d;
}

bool LinksExecDirs(const LayoutDecision& d) {
  return d.layout == Layout::kState && d.generation == Generation::kV1;
}

}  // namespace agent_init
