#include "process/signals.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "process/proc.h"

namespace agent_init {
namespace {

TEST(Signals, ParsesNamesNumbersAndRealtime) {
  EXPECT_EQ(ParseSignal("TERM"), SIGTERM);
  EXPECT_EQ(ParseSignal("SIGTERM"), SIGTERM);
  EXPECT_EQ(ParseSignal("sigquit"), SIGQUIT);
  EXPECT_EQ(ParseSignal("15"), 15);
  EXPECT_EQ(ParseSignal("RTMIN+3"), SIGRTMIN + 3);
  EXPECT_EQ(ParseSignal("SIGRTMAX-1"), SIGRTMAX - 1);
  EXPECT_EQ(ParseSignal("RTMIN"), SIGRTMIN);
  EXPECT_FALSE(ParseSignal("0"));
  EXPECT_FALSE(ParseSignal("65"));
  EXPECT_FALSE(ParseSignal("32"));
  EXPECT_FALSE(ParseSignal("33"));
  EXPECT_FALSE(ParseSignal("RTMAX+1"));
  EXPECT_FALSE(ParseSignal("NOPE"));
  EXPECT_FALSE(ParseSignal(""));
  EXPECT_EQ(SignalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(SignalName(SIGRTMIN + 3), "SIGRTMIN+3");
}

TEST(Signals, SignalMap) {
  auto m = ParseSignalMap({"TERM:QUIT", "HUP:RTMIN+3"});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->at(SIGTERM), SIGQUIT);
  EXPECT_EQ(m->at(SIGHUP), SIGRTMIN + 3);
  for (const char* bad : {"TERM", "TERM:", ":QUIT", "KILL:TERM", "STOP:TERM", "CHLD:TERM", "TERM:BOGUS"}) {
    auto r = ParseSignalMap({bad});
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(ExitCodeFor(r.error().kind), 64);
  }
}

TEST(Signals, SignalMapDropsWithZeroOrIgn) {
  auto m = ParseSignalMap({"HUP:0", "winch:ign", "USR2:SIG_IGN"});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->at(SIGHUP), 0);
  EXPECT_EQ(m->at(SIGWINCH), 0);
  EXPECT_EQ(m->at(SIGUSR2), 0);
  auto r = ParseSignalMap({"0:TERM"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().msg.find("0 (drop) is a TO only"), std::string::npos) << r.error().msg;
  EXPECT_FALSE(ParseSignalMap({"IGN:TERM"}));
  auto zeros = ParseSignalMap({"TERM:00"});
  ASSERT_TRUE(zeros);
  EXPECT_EQ(zeros->at(SIGTERM), 0);
  auto big = ParseSignalMap({"TERM:65"});
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().msg.find("`65` is not a signal name or number"), std::string::npos)
      << big.error().msg;
}

// glibc keeps 32 and 33 for its threads (SIGRTMIN is 34): refused, with the
// valid range in the hint.
TEST(Signals, SignalMapRefusesTheCLibrarysSignals) {
  for (const char* bad : {"32:TERM", "TERM:33"}) {
    auto r = ParseSignalMap({bad});
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(ExitCodeFor(r.error().kind), 64);
    EXPECT_NE(r.error().msg.find("reserved by the C library"), std::string::npos) << r.error().msg;
    EXPECT_NE(r.error().hint.find("1-31 and SIGRTMIN..SIGRTMAX (" + std::to_string(SIGRTMIN) + "-" +
                                  std::to_string(SIGRTMAX) + ")"),
              std::string::npos)
        << r.error().hint;
  }
  auto ok = ParseSignalMap({"31:" + std::to_string(SIGRTMIN), std::to_string(SIGRTMAX) + ":1"});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->at(31), SIGRTMIN);
}

TEST(Proc, ParsesStatWithAwkwardCommandNames) {
  auto st = ParseProcStat("1234 (a (b) c) S 77 1234 1234 0 -1");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->pid, 1234);
  EXPECT_EQ(st->ppid, 77);
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(ParseProcStat("5 (zombie) Z 1 5")->state, 'Z');
  EXPECT_FALSE(ParseProcStat("garbage"));
  EXPECT_FALSE(ParseProcStat("1 (x)"));
}

}  // namespace
}  // namespace agent_init
