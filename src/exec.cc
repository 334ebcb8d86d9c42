#include "exec.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace agent_init {
namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

Error ExecFailure(const std::string& program, int err) {
  if (err == ENOENT || err == ENOTDIR) {
    return MakeError(Kind::kNotFound, err, "execute " + Q(program), "check the command and its path");
  }
  std::string hint;
  if (err == EACCES) hint = "is the file executable, and is its filesystem mounted without noexec?";
  if (err == ENOEXEC) hint = "the file is not a program the kernel can run; scripts need a #! line";
  return MakeError(Kind::kNotExecutable, err, "execute " + Q(program), hint);
}

}  // namespace

Result<std::string> ResolveCommand(const std::string& name) {
  if (name.empty()) return Fail(Kind::kNotFound, "execute ``: empty command name");
  if (name.find('/') != std::string::npos) return name;
  const char* env = std::getenv("PATH");
  std::string_view path = env != nullptr ? env : kDefaultPath;
  std::string denied;
  while (true) {
    size_t colon = path.find(':');
    std::string_view dir = path.substr(0, colon);
    std::string candidate = dir.empty() ? name : std::string(dir) + "/" + name;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      if (denied.empty()) denied = candidate;
    }
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
  if (!denied.empty()) return std::unexpected(ExecFailure(denied, EACCES));
  return std::unexpected(
      MakeError(Kind::kNotFound, 0,
                "execute " + Q(name) + ": not found in PATH " + Q(env != nullptr ? env : kDefaultPath),
                "check the command name, or give its full path"));
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
