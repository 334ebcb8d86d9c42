#include "volume/history.h"

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace agent_init {
namespace {

TEST(History, RoundTripAndChanges) {
  History h = WithChange(History{}, "elastic-agent-aaaaaa", "t1");
  h = WithChange(h, "elastic-agent-bbbbbb", "t2");
  h = WithChange(h, "elastic-agent-bbbbbb", "t3");  // no change
  EXPECT_EQ(h.current, "elastic-agent-bbbbbb");
  EXPECT_EQ(h.current_hash, "bbbbbb");
  ASSERT_EQ(h.changes.size(), 2u);
  EXPECT_EQ(h.changes[1].from, "elastic-agent-aaaaaa");
  auto back = DecodeHistory(EncodeHistory(h));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->current, h.current);
  ASSERT_EQ(back->changes.size(), 2u);
  EXPECT_EQ(back->changes[1].at, "t2");
}

TEST(History, KeepsAShortHistory) {
  History h;
  for (int i = 0; i < 50; ++i) h = WithChange(h, "v" + std::to_string(i), "t");
  EXPECT_EQ(h.changes.size(), kMaxHistory);
  EXPECT_EQ(h.changes.back().to, "v49");
}

TEST(History, RejectsDamagedFiles) {
  EXPECT_FALSE(DecodeHistory(""));
  EXPECT_FALSE(DecodeHistory("format agent-init-history-1\ncurrent a\n"));
  EXPECT_FALSE(DecodeHistory("format agent-init-history-1\ncurrent a\ncurrent-hash \nat x\nfrom y\n"));
  test::TempDir t;
  test::WriteFile(t / "history", "garbage");
  auto dir = Dir::OpenTrusted(t.path());
  auto r = ReadHistory(*dir);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().msg.find(t / "history"), std::string::npos);
}

}  // namespace
}  // namespace agent_init
