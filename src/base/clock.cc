#include "base/clock.h"

#include <chrono>
#include <cstdio>

namespace agent_init {
namespace {

// The calendar in std::chrono: gmtime(3) and strftime(3) would read
// /etc/localtime (glibc's tzset) at every start, for a time that is UTC
// anyway.
std::string Format(const char* format) {
  using namespace std::chrono;
  const auto now = floor<seconds>(system_clock::now());
  const auto day = floor<days>(now);
  const year_month_day date{day};
  const hh_mm_ss time{now - day};
  char buf[32];
  std::snprintf(buf, sizeof buf, format, static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<int>(time.hours().count()),
                static_cast<int>(time.minutes().count()), static_cast<int>(time.seconds().count()));
  return buf;
}

}  // namespace

std::string UtcNow() { return Format("%04d-%02u-%02uT%02d:%02d:%02dZ"); }
std::string UtcStamp() { return Format("%04d%02u%02uT%02d%02d%02dZ"); }

}  // namespace agent_init
