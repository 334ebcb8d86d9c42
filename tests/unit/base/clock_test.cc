#include "base/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <regex>

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
  EXPECT_TRUE(std::regex_match(now, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"))) << now;
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
