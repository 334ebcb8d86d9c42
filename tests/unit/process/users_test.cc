#include "process/users.h"

#include <gtest/gtest.h>

#include "base/exit_codes.h"

namespace agent_init {
namespace {

constexpr const char* kPasswd =
    "# comment\n"
    "root:x:0:0:root:/root:/bin/bash\n"
    "\n"
    "short:x:5\n"
    "bad:x:notanumber:1:x:/x:/bin/sh\n"
    "elastic-agent:x:1000:1000::/usr/share/elastic-agent:/bin/false\n"
    "elastic-agent:x:1001:1001::/second/match:/bin/false\n"
    "other:x:2000:2000::/home/other:/bin/sh\r\n";
constexpr const char* kGroup =
    "root:x:0:\n"
    "elastic-agent:x:1000:\n"
    "docker:x:999:other,elastic-agent\n"
    "adm:x:4:elastic-agent\n"
    "# x:x:5:elastic-agent\n"
    "staff:x:50:other\n";

TEST(Users, ParsesLinesAndSkipsJunk) {
  EXPECT_FALSE(ParsePasswdLine(""));
  EXPECT_FALSE(ParsePasswdLine("# root:x:0:0::/:/bin/sh"));
  EXPECT_FALSE(ParsePasswdLine("short:x:5"));
  EXPECT_FALSE(ParsePasswdLine("neg:x:-1:0::/:/bin/sh"));
  EXPECT_FALSE(ParsePasswdLine("big:x:4294967295:0::/:/bin/sh")) << "(uid_t)-1 is not a user";
  auto p = ParsePasswdLine("a:x:12:34:gecos:/home/a:/bin/sh");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->uid, 12u);
  EXPECT_EQ(p->gid, 34u);
  EXPECT_EQ(p->home, "/home/a");
  auto g = ParseGroupLine("g:x:7:a,,b");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->members, (std::vector<std::string>{"a", "b"}));
}

TEST(Users, NameGivesUidPrimaryGroupAndSupplementaryGroups) {
  auto c = ResolveUser("elastic-agent", kPasswd, kGroup);
  ASSERT_TRUE(c) << c.error().msg;
  EXPECT_EQ(c->uid, 1000u);
  EXPECT_EQ(c->gid, 1000u);
  EXPECT_EQ(c->groups, (std::vector<gid_t>{1000, 999, 4})) << "first match wins, comments skipped";
  EXPECT_EQ(c->home, "/usr/share/elastic-agent");
}

TEST(Users, UserColonGroupUsesThatGroupOnly) {
  auto c = ResolveUser("elastic-agent:staff", kPasswd, kGroup);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->uid, 1000u);
  EXPECT_EQ(c->gid, 50u);
  EXPECT_TRUE(c->groups.empty());
  auto n = ResolveUser("other:0", kPasswd, kGroup);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->gid, 0u);
}

TEST(Users, NumericIdsNeedNoEntries) {
  auto c = ResolveUser("1000:1000", "", "");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->uid, 1000u);
  EXPECT_EQ(c->gid, 1000u);
  EXPECT_TRUE(c->groups.empty());
  EXPECT_TRUE(c->home.empty());
  auto alone = ResolveUser("4242", "", "");
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->gid, 4242u) << "a numeric uid without an entry gets gid = uid";
}

// A number is an id: one past the largest is out of range (64), not an
// unknown name (67).
TEST(Users, IdsOutOfRangeAre64) {
  for (const char* spec :
       {"4294967295", "4294967296", "99999999999", "1000:4294967295", "0:18446744073709551616"}) {
    auto c = ResolveUser(spec, kPasswd, kGroup);
    ASSERT_FALSE(c) << spec;
    EXPECT_EQ(ExitCodeFor(c.error().kind), 64) << spec << ": " << c.error().msg;
    EXPECT_NE(c.error().msg.find("out of range"), std::string::npos) << c.error().msg;
  }
  auto largest = ResolveUser("4294967294:4294967294", "", "");
  ASSERT_TRUE(largest);
  EXPECT_EQ(largest->uid, 4294967294u);
}

TEST(Users, NumericUidWithEntryUsesIt) {
  auto c = ResolveUser("2000", kPasswd, kGroup);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "other");
  EXPECT_EQ(c->gid, 2000u);
  EXPECT_EQ(c->groups, (std::vector<gid_t>{2000, 999, 50}));
  EXPECT_EQ(c->home, "/home/other");
}

TEST(Users, UnknownNamesAre67NeverRoot) {
  auto u = ResolveUser("nobody-here", kPasswd, kGroup);
  ASSERT_FALSE(u);
  EXPECT_EQ(ExitCodeFor(u.error().kind), 67);
  EXPECT_NE(u.error().msg.find("nobody-here"), std::string::npos);
  auto g = ResolveUser("elastic-agent:nogroup", kPasswd, kGroup);
  ASSERT_FALSE(g);
  EXPECT_EQ(ExitCodeFor(g.error().kind), 67);
  EXPECT_FALSE(ResolveUser("bad", kPasswd, kGroup)) << "a malformed line defines no user";
}

TEST(Users, MalformedSpecsAreUsageErrors) {
  for (const char* spec : {"", ":", "user:", ":group"}) {
    auto r = ResolveUser(spec, kPasswd, kGroup);
    ASSERT_FALSE(r) << spec;
    EXPECT_EQ(ExitCodeFor(r.error().kind), 64) << spec;
  }
}

TEST(Users, ParseId) {
  EXPECT_EQ(ParseId("0"), 0u);
  EXPECT_EQ(ParseId("4294967294"), 4294967294u);
  EXPECT_FALSE(ParseId("4294967295"));
  EXPECT_FALSE(ParseId("99999999999"));
  EXPECT_FALSE(ParseId("+1"));
  EXPECT_FALSE(ParseId("1a"));
  EXPECT_FALSE(ParseId(""));
}

}  // namespace
}  // namespace agent_init
