#include "base/two_workers.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <new>

namespace agent_init {
namespace {

struct Shared {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
};
static_assert(std::atomic<std::size_t>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "the index is shared between two processes");

void Take(Shared& shared, std::size_t count, const std::function<bool(std::size_t)>& item) {
  for (std::size_t i; !shared.stop.load() && (i = shared.next.fetch_add(1)) < count;) {
    if (!item(i)) shared.stop.store(true);
  }
}

[[noreturn]] void ServeAsChild(Shared& shared, std::size_t count,
                               const std::function<bool(std::size_t)>& item,
                               const std::function<std::string()>& report, pid_t parent, int out) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);  // the parent died before the line above
  Take(shared, count, item);
  const std::string text = report();
  for (std::size_t done = 0; done < text.size();) {
    ssize_t n = ::write(out, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(1);
    done += static_cast<std::size_t>(n);
  }
  ::_exit(0);
}

// The child's report, read to its end, and the child reaped; nullopt when it
// did not exit 0 after sending it.
std::optional<std::string> Collect(int in, pid_t child) {
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return text;
}

}  // namespace

bool RunOnTwoWorkers(std::size_t count, bool two, const std::function<bool(std::size_t)>& item,
                     const std::function<std::string()>& report, std::optional<std::string>* child_report) {
  child_report->reset();
  void* mem = two ? ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)
                  : MAP_FAILED;
  Shared alone;
  Shared& shared = mem != MAP_FAILED ? *new (mem) Shared : alone;  // made before the fork: both see it
  int fds[2] = {-1, -1};
  pid_t child = -1;
  const pid_t parent = ::getpid();
  if (mem != MAP_FAILED && ::pipe2(fds, O_CLOEXEC) == 0) {
    child = ::fork();
    if (child == 0) {
      ::close(fds[0]);
      ServeAsChild(shared, count, item, report, parent, fds[1]);
    }
    ::close(fds[1]);
  }
  Take(shared, count, item);
  bool whole = true;
  if (child > 0) {
    *child_report = Collect(fds[0], child);
    whole = child_report->has_value();
  }
  if (fds[0] >= 0) ::close(fds[0]);
  if (mem != MAP_FAILED) ::munmap(mem, sizeof(Shared));
  return whole;
}

}  // namespace agent_init
