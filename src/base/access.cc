#include "base/access.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

namespace agent_init {
namespace {

std::string Ownership(const struct stat& st) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return "owned by " + std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid) + ", mode " + mode;
}

}  // namespace

std::string DescribeSelf() {
  std::string out = "uid " + std::to_string(::geteuid()) + ", gid " + std::to_string(::getegid()) + ", groups";
  int n = ::getgroups(0, nullptr);
  std::vector<gid_t> groups(n > 0 ? static_cast<size_t>(n) : 0);
  if (n > 0) n = ::getgroups(n, groups.data());
  if (n <= 0) return out + " none";
  for (int i = 0; i < n; ++i) out += " " + std::to_string(groups[static_cast<size_t>(i)]);
  return out;
}

std::string SelfIds() { return std::to_string(::geteuid()) + ":" + std::to_string(::getegid()); }

std::string DescribeOwnership(const Dir& dir) {
  struct stat st;
  if (::fstat(dir.fd(), &st) < 0) return {};
  return Ownership(st);
}

std::string DescribeOwnership(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) < 0) return {};
  return Ownership(st);
}

bool MayChange(const Dir& dir) {
  if (::faccessat(dir.fd(), "", W_OK | X_OK, AT_EACCESS | AT_EMPTY_PATH) == 0) return true;
  return !IsPermissionError(errno);
}

}  // namespace agent_init
