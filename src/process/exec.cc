#include "process/exec.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace agent_init {
namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

bool IsPath(const std::string& name) noexcept { return name.find('/') != std::string::npos; }

}  // namespace

CommandSearch SearchFor(const std::string& name) {
  CommandSearch search;
  search.name = name;
  if (name.empty()) return search;
  if (IsPath(name)) {
    search.candidates.push_back(name);
    return search;
  }
  const char* env = std::getenv("PATH");
  search.path = env != nullptr ? env : kDefaultPath;
  std::string_view path = search.path;
  while (true) {
    size_t colon = path.find(':');
    std::string_view dir = path.substr(0, colon);
    search.candidates.push_back(dir.empty() ? name : std::string(dir) + "/" + name);
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
  return search;
}

Found FindProgram(const CommandSearch& search) noexcept {
  Found found;
  // A path is execve's to judge: its errno says more than a stat here.
  if (IsPath(search.name)) {
    found.index = 0;
    return found;
  }
  for (size_t i = 0; i < search.candidates.size(); ++i) {
    const char* candidate = search.candidates[i].c_str();
    struct stat st;
    if (::stat(candidate, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::access(candidate, X_OK) == 0) {
      found.index = static_cast<int>(i);
      return found;
    }
    if (found.denied < 0) found.denied = static_cast<int>(i);
  }
  return found;
}

Kind SearchFailureKind(Found found) noexcept {
  return found.denied >= 0 ? Kind::kNotExecutable : Kind::kNotFound;
}

Error SearchFailure(const CommandSearch& search, Found found) {
  if (search.name.empty()) return MakeError(Kind::kNotFound, 0, "execute ``: empty command name");
  if (found.denied >= 0) return ExecFailure(search.candidates[static_cast<size_t>(found.denied)], EACCES);
  return MakeError(Kind::kNotFound, 0, "execute " + Q(search.name) + ": not found in PATH " + Q(search.path),
                   "check the command name, or give its full path");
}

Kind ExecFailureKind(int err) noexcept {
  return err == ENOENT || err == ENOTDIR ? Kind::kNotFound : Kind::kNotExecutable;
}

Error ExecFailure(const std::string& program, int err) {
  if (ExecFailureKind(err) == Kind::kNotFound) {
    return MakeError(Kind::kNotFound, err, "execute " + Q(program), "check the command and its path");
  }
  std::string hint;
  if (err == EACCES) hint = "is the file executable, and is its filesystem mounted without noexec?";
  if (err == ENOEXEC) hint = "the file is not a program the kernel can run; scripts need a #! line";
  return MakeError(Kind::kNotExecutable, err, "execute " + Q(program), hint);
}

Result<std::string> ResolveCommand(const std::string& name) {
  CommandSearch search = SearchFor(name);
  Found found = FindProgram(search);
  if (found.index < 0) return std::unexpected(SearchFailure(search, found));
  return search.candidates[static_cast<size_t>(found.index)];
}

Error ExecCommand(const std::vector<std::string>& argv, char* const* envp) {
  auto program = ResolveCommand(argv.front());
  if (!program) return program.error();
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execve(program->c_str(), args.data(), envp);
  return ExecFailure(*program, errno);
}

}  // namespace agent_init
