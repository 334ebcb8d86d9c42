#include "clock.h"

#include <algorithm>
#include <charconv>
#include <chrono>

namespace agent_init {
namespace {

// Digits of `value`, zero-padded to `width`.
void Put(std::string& out, int value, int width) {
  char digits[12];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  (void)ec;
  out.append(static_cast<size_t>(std::max<long>(0, width - (end - digits))), '0');
  out.append(digits, end);
}

// The calendar in std::chrono, formatted by hand: gmtime(3) and strftime(3)
// would read /etc/localtime (glibc's tzset) at every start, for a time that
// is UTC anyway.
std::string Format(bool separators) {
  using namespace std::chrono;
  const auto now = floor<seconds>(system_clock::now());
  const auto day = floor<days>(now);
  const year_month_day date{day};
  const hh_mm_ss time{now - day};
  std::string out;
  out.reserve(24);
  const char* date_sep = separators ? "-" : "";
  const char* time_sep = separators ? ":" : "";
  Put(out, static_cast<int>(date.year()), 4);
  out += date_sep;
  Put(out, static_cast<int>(static_cast<unsigned>(date.month())), 2);
  out += date_sep;
  Put(out, static_cast<int>(static_cast<unsigned>(date.day())), 2);
  out += 'T';
  Put(out, static_cast<int>(time.hours().count()), 2);
  out += time_sep;
  Put(out, static_cast<int>(time.minutes().count()), 2);
  out += time_sep;
  Put(out, static_cast<int>(time.seconds().count()), 2);
  out += 'Z';
  return out;
}

}  // namespace

std::string UtcNow() { return Format(true); }
std::string UtcStamp() { return Format(false); }

}  // namespace agent_init
