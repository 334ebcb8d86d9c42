#include "base/json.h"

#include <gtest/gtest.h>

namespace agent_init {
namespace {

TEST(Json, WritesNestedValues) {
  JsonWriter j;
  j.BeginObject().Field("a", "x").Key("b").BeginArray().Int(-1).Uint(2).Bool(true).Null().EndArray();
  j.Key("c").BeginObject().EndObject().EndObject();
  EXPECT_EQ(j.str(), R"({"a":"x","b":[-1,2,true,null],"c":{}})");
}

TEST(Json, EscapesControlBytesQuotesAndInvalidUtf8) {
  std::string out;
  AppendJsonString(out, std::string("q\"\\\n\t\x01\x7f") + "é" + "\xff" + "\xc3" + "\xed\xa0\x80");
  EXPECT_EQ(out, "\"q\\\"\\\\\\n\\t\\u0001\\u007fé\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
}

TEST(Json, KeepsValidMultibyteSequences) {
  std::string out;
  AppendJsonString(out, "日本 \xf0\x9f\x98\x80");
  EXPECT_EQ(out, "\"日本 \xf0\x9f\x98\x80\"");
}

}  // namespace
}  // namespace agent_init
