#include "process/proc.h"

#include <dirent.h>

#include <fcntl.h>
#include <unistd.h>
#include <cstdlib>

#include <map>
#include <string>

namespace agent_init {

std::optional<ProcStat> ParseProcStat(std::string_view text) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  ProcStat st;
  std::string_view head = text.substr(0, open);
  for (char c : head) {
    if (c >= '0' && c <= '9') st.pid = st.pid * 10 + (c - '0');
  }
  std::string_view rest = text.substr(close + 1);
  // " S ppid ..."
  size_t i = 0;
  while (i < rest.size() && rest[i] == ' ') ++i;
  if (i >= rest.size()) return std::nullopt;
  st.state = rest[i++];
  while (i < rest.size() && rest[i] == ' ') ++i;
  if (i >= rest.size() || rest[i] < '0' || rest[i] > '9') return std::nullopt;
  while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') st.ppid = st.ppid * 10 + (rest[i++] - '0');
  return st;
}

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  return ParseProcStat(std::string_view(buf, static_cast<size_t>(n)));
}

std::vector<pid_t> Descendants(pid_t root) {
  std::multimap<pid_t, ProcStat> children;  // ppid -> the child
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return {};
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    auto st = ReadProcStat(static_cast<pid_t>(std::atoi(e->d_name)));
    if (st) children.emplace(st->ppid, *st);
  }
  ::closedir(d);
  // Walked through zombies too (a thread-group leader that exited while its
  // threads run shows as one, its children below it), listed without them.
  std::vector<pid_t> out;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    auto [lo, hi] = children.equal_range(p);
    for (auto it = lo; it != hi; ++it) {
      if (it->second.state != 'Z' && it->second.state != 'X') out.push_back(it->second.pid);
      todo.push_back(it->second.pid);
    }
  }
  return out;
}

}  // namespace agent_init
