#include "temp_dir.h"

#include <grp.h>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace agent_init::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/agent-init-test.XXXXXX";
  char* made = ::mkdtemp(tmpl.data());
  if (made == nullptr) {
    ADD_FAILURE() << "mkdtemp " << tmpl << ": " << std::strerror(errno);
    std::abort();
  }
  path_ = made;
}

TempDir::~TempDir() {
  std::error_code ec;
  // Read-only or 0000 directories left by a test must not stop the clean-up.
  for (auto it = std::filesystem::recursive_directory_iterator(
           path_, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
  }
  std::filesystem::remove_all(path_, ec);
}

void MakeDirs(const std::string& path, mode_t mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  ASSERT_FALSE(ec) << "mkdir -p " << path << ": " << ec.message();
  ::chmod(path.c_str(), mode);
}

void WriteFile(const std::string& path, const std::string& content, mode_t mode) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(f.good()) << "open " << path;
  f << content;
  f.close();
  ::chmod(path.c_str(), mode);
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void Symlink(const std::string& target, const std::string& path) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  ASSERT_EQ(::symlink(target.c_str(), path.c_str()), 0) << "symlink " << path << ": " << std::strerror(errno);
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

bool IsSymlink(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

bool IsDir(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsBtrfsSubvolume(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_ino == 256;
}

std::string MakeBtrfsImage(const std::string& path) {
  if (Shell("truncate -s 256M " + path + " && mkfs.btrfs -q " + path + " >/dev/null 2>&1") != 0) return "";
  return path;
}

int Shell(const std::string& command) {
  int rc = std::system(command.c_str());
  if (rc < 0) return -1;
  if (WIFEXITED(rc)) return WEXITSTATUS(rc);
  if (WIFSIGNALED(rc)) return 128 + WTERMSIG(rc);
  return -1;
}

namespace {

std::string Drain(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

}  // namespace

pid_t Spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> cargv;
    for (auto& a : const_cast<std::vector<std::string>&>(argv)) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::execv(cargv[0], cargv.data());
    _exit(127);
  }
  return pid;
}

int Wait(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

RunResult Run(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  return RunAs(RunAsUser{::getuid(), ::getgid(), {}}, argv, env);
}

RunResult RunAs(const RunAsUser& as, const std::vector<std::string>& argv,
                const std::vector<std::string>& env) {
  const bool same = as.uid == ::getuid() && as.gid == ::getgid() && as.groups.empty();
  RunResult r;
  char out_tmpl[] = "/tmp/agent-init-run-out.XXXXXX";
  char err_tmpl[] = "/tmp/agent-init-run-err.XXXXXX";
  int out_fd = ::mkstemp(out_tmpl);
  int err_fd = ::mkstemp(err_tmpl);
  ::unlink(out_tmpl);
  ::unlink(err_tmpl);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    std::vector<std::string> envs;
    for (char** e = environ; *e; ++e) envs.emplace_back(*e);
    for (const auto& kv : env) {
      std::string key = kv.substr(0, kv.find('='));
      std::erase_if(envs, [&](const std::string& s) { return s.compare(0, key.size() + 1, key + "=") == 0; });
      if (kv.find('=') != std::string::npos) envs.push_back(kv);  // "KEY" alone unsets it
    }
    std::vector<char*> cenv;
    for (auto& s : envs) cenv.push_back(s.data());
    cenv.push_back(nullptr);
    std::vector<char*> cargv;
    for (auto& a : const_cast<std::vector<std::string>&>(argv)) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    if (!same && (::setgroups(as.groups.size(), as.groups.data()) < 0 ||
                  ::setresgid(as.gid, as.gid, as.gid) < 0 || ::setresuid(as.uid, as.uid, as.uid) < 0)) {
      _exit(126);
    }
    ::execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  ::lseek(out_fd, 0, SEEK_SET);
  ::lseek(err_fd, 0, SEEK_SET);
  r.out = Drain(out_fd);
  r.err = Drain(err_fd);
  ::close(out_fd);
  ::close(err_fd);
  return r;
}

std::string TreeDigest(const std::string& root) {
  std::vector<std::string> lines;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const auto& p = it->path();
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) continue;
    std::string rel = p.lexically_relative(root).string();
    std::ostringstream line;
    line << rel << " mode=" << std::oct << st.st_mode << std::dec;
    if (S_ISREG(st.st_mode)) {
      std::string data = ReadFile(p.string());
      line << " size=" << data.size() << " hash=" << std::hash<std::string>{}(data);
    } else if (S_ISLNK(st.st_mode)) {
      line << " -> " << std::filesystem::read_symlink(p, ec).string();
    }
    lines.push_back(line.str());
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace agent_init::test
