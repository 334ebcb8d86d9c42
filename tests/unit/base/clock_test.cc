#include "base/clock.h"

#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <ctime>

namespace agent_init {
namespace {

// The clock UtcNow reads: time(2) may lag it across a second boundary.
std::time_t Now() { return std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()); }

std::string Strftime(std::time_t t, const char* format) {
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

// The hand-made format agrees with gmtime + strftime (one of the two
// seconds around the call, should the clock tick in between).
TEST(Clock, UtcNowIsIso8601Utc) {
  std::time_t before = Now();
  std::string now = UtcNow();
  std::time_t after = Now();
  // YYYY-MM-DDTHH:MM:SSZ: a 9 stands for any digit.
  const std::string shape = "9999-99-99T99:99:99Z";
  bool fits = now.size() == shape.size();
  for (size_t i = 0; fits && i < shape.size(); ++i)
    fits = shape[i] == '9' ? std::isdigit(static_cast<unsigned char>(now[i])) != 0 : now[i] == shape[i];
  EXPECT_TRUE(fits) << now;
  EXPECT_TRUE(now == Strftime(before, "%Y-%m-%dT%H:%M:%SZ") || now == Strftime(after, "%Y-%m-%dT%H:%M:%SZ"))
      << now;
}

TEST(Clock, UtcStampIsCompact) {
  std::time_t before = Now();
  std::string stamp = UtcStamp();
  std::time_t after = Now();
  EXPECT_TRUE(stamp == Strftime(before, "%Y%m%dT%H%M%SZ") || stamp == Strftime(after, "%Y%m%dT%H%M%SZ"))
      << stamp;
}

}  // namespace
}  // namespace agent_init
