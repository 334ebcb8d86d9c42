#include "volume/journal.h"

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace agent_init {
namespace {

TEST(Journal, WriteReadClear) {
  test::TempDir t;
  auto dir = Dir::OpenTrusted(t.path());
  ASSERT_TRUE(dir);
  Journal j(*dir);
  auto empty = j.Read();
  ASSERT_TRUE(empty);
  EXPECT_FALSE(*empty);
  Intent in{"migrate", "20261202T170102Z", "collect", {{"from", "/x/run"}}};
  ASSERT_TRUE(j.Write(in));
  auto got = j.Read();
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->op, "migrate");
  EXPECT_EQ((*got)->id, in.id);
  EXPECT_EQ((*got)->phase, "collect");
  EXPECT_EQ(Lookup((*got)->args, "from"), "/x/run");
  EXPECT_FALSE(test::Exists(t / ".journal.tmp"));
  ASSERT_TRUE(j.Clear());
  EXPECT_FALSE(test::Exists(t / "journal"));
  ASSERT_TRUE(j.Clear()) << "clearing twice is fine";
}

TEST(Journal, UnknownContentIsAnErrorNotAGuess) {
  test::TempDir t;
  test::WriteFile(t / "journal", "format agent-init-journal-9\nop x\nid y\nphase z\n");
  auto dir = Dir::OpenTrusted(t.path());
  Journal j(*dir);
  auto got = j.Read();
  ASSERT_FALSE(got);
  EXPECT_EQ(ExitCodeFor(got.error().kind), 65);
  EXPECT_NE(got.error().msg.find(t / "journal"), std::string::npos);
}

TEST(Journal, SymlinkedJournalIsRefused) {
  test::TempDir t;
  test::WriteFile(t / "outside", "format agent-init-journal-1\nop migrate\nid a\nphase merge\n");
  test::MakeDirs(t / "ai");
  test::Symlink(t / "outside", t / "ai/journal");
  auto dir = Dir::OpenTrusted(t / "ai");
  Journal j(*dir);
  auto got = j.Read();
  ASSERT_FALSE(got);
  EXPECT_EQ(ExitCodeFor(got.error().kind), 77);
  // Writing replaces the symlink itself; the target is untouched.
  ASSERT_TRUE(j.Write(Intent{"migrate", "b", "collect", {}}));
  EXPECT_FALSE(test::IsSymlink(t / "ai/journal"));
  EXPECT_EQ(test::ReadFile(t / "outside"), "format agent-init-journal-1\nop migrate\nid a\nphase merge\n");
}

TEST(Journal, DecodeRejectsMissingFields) {
  EXPECT_FALSE(DecodeIntent(""));
  EXPECT_FALSE(DecodeIntent("format agent-init-journal-1\nop migrate\nid a\n"));
  EXPECT_FALSE(DecodeIntent("format agent-init-journal-1\nid a\nop migrate\nphase x\n"));
  EXPECT_FALSE(DecodeIntent("format agent-init-journal-1\nop \nid a\nphase x\n"));
  EXPECT_FALSE(DecodeIntent("format agent-init-journal-1\nop migrate\nid \nphase x\n"));
}

// A journal written by whoever owns the volume must not steer recovery out
// of agent-init's own directories.
TEST(Journal, DecodeRejectsNamesThatLeaveTheBookkeepingDirectory) {
  const std::string head = "format agent-init-journal-1\nop snapshot\n";
  EXPECT_TRUE(DecodeIntent(head + "id elastic-agent-aaaaaa\nphase publish\nkeep 2\nrun-parent data\n"));
  EXPECT_FALSE(DecodeIntent(head + "id ../../../../etc/passwd\nphase publish\n"));
  EXPECT_FALSE(DecodeIntent(head + "id .partial\nphase publish\n"));
  EXPECT_FALSE(DecodeIntent(head + "id a\nphase swap\nsaved-as ../run\n"));
  EXPECT_FALSE(DecodeIntent(head + "id a\nphase prune\nkeep 0\n"));
  EXPECT_FALSE(DecodeIntent(head + "id a\nphase prune\nkeep -1\n"));
  EXPECT_FALSE(DecodeIntent(head + "id a\nphase copy\nrun-parent ../..\n"));
  EXPECT_TRUE(DecodeIntent(head + "id a\nphase prune\nkeep 1001\n")) << "a restore with --keep-snapshots 1000";
  EXPECT_FALSE(DecodeIntent(head + "id a\nphase prune\nkeep 1002\n"));
  const std::string migrate = "format agent-init-journal-1\nop migrate\nid a\nphase merge\n";
  EXPECT_TRUE(DecodeIntent(migrate + "volume-from run\ninto data/run\n"));
  EXPECT_FALSE(DecodeIntent(migrate + "volume-from ../../etc\ninto data/run\n"));
  EXPECT_FALSE(DecodeIntent(migrate + "volume-from run\ninto .agent-init\n"));
  EXPECT_FALSE(DecodeIntent(head + "id a\nphase copy\nsubvolume-run maybe\n"));
}

}  // namespace
}  // namespace agent_init
