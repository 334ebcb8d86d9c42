#include "base/record.h"

#include <gtest/gtest.h>

namespace agent_init {
namespace {

TEST(Record, RoundTripsAnyBytes) {
  std::string nasty = "a b\nc%d\x01\xff\xfe" + std::string(1, '\0') + "end";
  Record r{{"name", nasty}, {"empty", ""}, {"k-2_x", "plain"}};
  std::string text = EncodeRecord(r);
  EXPECT_EQ(text.find('\0'), std::string::npos);
  auto back = DecodeRecord(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, r);
  EXPECT_EQ(Lookup(*back, "name"), nasty);
  EXPECT_FALSE(Lookup(*back, "missing"));
}

TEST(Record, RejectsMalformedText) {
  EXPECT_FALSE(DecodeRecord("key value"));    // torn: no final newline
  EXPECT_FALSE(DecodeRecord("Key value\n"));  // bad key
  EXPECT_FALSE(DecodeRecord(" value\n"));     // empty key
  EXPECT_FALSE(DecodeRecord("key\n"));        // no separator
  EXPECT_FALSE(DecodeRecord("key a%2\n"));    // short escape
  EXPECT_FALSE(DecodeRecord("key a%zz\n"));   // bad escape
  EXPECT_FALSE(DecodeRecord("key a b\n"));    // raw space in value
  EXPECT_TRUE(DecodeRecord(""));
}

}  // namespace
}  // namespace agent_init
