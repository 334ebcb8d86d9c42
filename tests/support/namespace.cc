#include "namespace.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

namespace agent_init::test {

bool DenySyscall(long nr) {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

std::optional<std::string> MountNamespaceUnavailable() {
  if (::geteuid() != 0) return "not running as root";
  pid_t pid = ::fork();
  if (pid == 0) _exit(::unshare(CLONE_NEWNS) == 0 ? 0 : 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "unshare(CLONE_NEWNS) failed";
  return std::nullopt;
}

std::string InChild(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) < 0) return std::string("pipe: ") + std::strerror(errno);
  pid_t pid = ::fork();
  if (pid < 0) return std::string("fork: ") + std::strerror(errno);
  if (pid == 0) {
    ::close(fds[0]);
    std::string answer = body();
    if (answer.empty()) answer = "ok";
    (void)!::write(fds[1], answer.data(), answer.size());
    _exit(0);
  }
  ::close(fds[1]);
  std::string answer;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) answer.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return "child killed by signal " + std::to_string(WTERMSIG(status));
  if (answer == "ok") return "";
  return answer.empty() ? "child gave no answer" : answer;
}

std::string InMountNamespace(const std::function<std::string()>& body) {
  return InChild([&]() -> std::string {
    if (::unshare(CLONE_NEWNS) < 0) return std::string("unshare: ") + std::strerror(errno);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0)
      return std::string("make / private: ") + std::strerror(errno);
    return body();
  });
}

bool DropSysAdmin() {
  if (::prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) < 0) return false;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) < 0) return false;
  data[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
  data[CAP_SYS_ADMIN / 32].permitted &= ~(1u << (CAP_SYS_ADMIN % 32));
  data[CAP_SYS_ADMIN / 32].inheritable &= ~(1u << (CAP_SYS_ADMIN % 32));
  return ::syscall(SYS_capset, &header, data) == 0;
}

}  // namespace agent_init::test
