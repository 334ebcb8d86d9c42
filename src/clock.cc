#include "clock.h"

#include <ctime>

namespace agent_init {
namespace {

std::string Format(const char* format) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

}  // namespace

std::string UtcNow() { return Format("%Y-%m-%dT%H:%M:%SZ"); }
std::string UtcStamp() { return Format("%Y%m%dT%H%M%SZ"); }

}  // namespace agent_init
