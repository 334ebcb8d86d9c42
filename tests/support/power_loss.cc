#include "power_loss.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace agent_init::test {

std::string PowerFsBinary() {
#ifdef POWERFS_BINARY
  return POWERFS_BINARY;
#else
  return "";
#endif
}

PowerFs::~PowerFs() {
  if (daemon_ > 0) Unmount();
}

std::string PowerFs::Prepare(const std::string& backing, const std::string& mountpoint) {
  if (PowerFsBinary().empty()) return "this build has no powerfs (libfuse3-dev was missing)";
  backing_ = backing;
  mountpoint_ = mountpoint;
  ::mkdir(backing.c_str(), 0755);
  ::mkdir(mountpoint.c_str(), 0755);
  if (::mount("tmpfs", backing.c_str(), "tmpfs", 0, "mode=0755") < 0)
    return "mount a tmpfs at " + backing + ": " + std::strerror(errno);
  return "";
}

// Starts the daemon and waits for its word that the kernel has mounted it.
std::string PowerFs::Mount() {
  int ready[2], err[2];
  if (::pipe2(ready, O_CLOEXEC) < 0 || ::pipe2(err, O_CLOEXEC) < 0) return "pipe";
  daemon_ = ::fork();
  if (daemon_ == 0) {
    // Only these: a pipe of the test's left open here would never end.
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(err[1], 2);
    ::dup2(ready[1], 3);
    ::syscall(SYS_close_range, 4, ~0U, 0);
    // A test that ends without unmounting (a failed assertion) takes it
    // along: SIGTERM ends the session, and powerfs unmounts and exits.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    ::setenv("POWERFS_READY_FD", "3", 1);
    std::string bin = PowerFsBinary();
    ::execl(bin.c_str(), bin.c_str(), backing_.c_str(), mountpoint_.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(ready[1]);
  ::close(err[1]);
  struct pollfd p {
    ready[0], POLLIN, 0
  };
  char word[8] = {};
  bool up = ::poll(&p, 1, 10000) == 1 && ::read(ready[0], word, sizeof word) > 0;
  ::close(ready[0]);
  report_.clear();
  if (!up) {
    char buf[4096];
    ssize_t n = ::read(err[0], buf, sizeof buf);
    ::close(err[0]);
    ::kill(daemon_, SIGKILL);
    ::waitpid(daemon_, nullptr, 0);
    daemon_ = -1;
    return "powerfs did not mount at " + mountpoint_ + ": " + (n > 0 ? std::string(buf, static_cast<size_t>(n)) : "");
  }
  // The daemon's last words (its report) are read when it exits.
  err_ = err[0];
  return "";
}

void PowerFs::Sync() const {
  struct stat st;
  ::lstat((mountpoint_ + "/" + kPowerFsSyncfsName).c_str(), &st);
}

std::string PowerFs::Unmount() {
  if (daemon_ <= 0) return "";
  std::string failure;
  if (::umount2(mountpoint_.c_str(), 0) < 0) {
    failure = "unmount " + mountpoint_ + ": " + std::strerror(errno);
    ::umount2(mountpoint_.c_str(), MNT_DETACH);
  }
  int status = 0;
  ::waitpid(daemon_, &status, 0);
  daemon_ = -1;
  report_.clear();
  char buf[4096];
  for (ssize_t n; (n = ::read(err_, buf, sizeof buf)) > 0;) report_.append(buf, static_cast<size_t>(n));
  ::close(err_);
  err_ = -1;
  if (failure.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    failure = "powerfs failed: " + report_;
  return failure;
}

std::string PowerFs::PowerLoss() {
  if (auto e = Unmount(); !e.empty()) return e;
  return Mount();
}

}  // namespace agent_init::test
