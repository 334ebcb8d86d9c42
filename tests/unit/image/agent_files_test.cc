#include "image/agent_files.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace agent_init {
namespace {

// Every row says how the agent saves it, which agents write it and where
// their source says so: the table is the model, and a row without its
// source is a guess.
TEST(AgentFiles, EveryRowCitesItsSource) {
  for (const AgentGeneration& g : AgentGenerations()) {
    EXPECT_FALSE(g.files.empty()) << g.versions;
    for (const AgentFile& f : g.files) {
      EXPECT_FALSE(f.saved.empty()) << f.name;
      EXPECT_FALSE(f.versions.empty()) << f.name;
      EXPECT_TRUE(f.source.find(".go:") != std::string_view::npos) << f.name << ": " << f.source;
    }
  }
}

TEST(AgentFiles, EachLayoutListsEveryPlaceOnce) {
  for (Layout l : {Layout::kRun, Layout::kState}) {
    std::set<std::pair<std::string, AgentDir>> seen;
    for (const AgentFile* f : AgentFilesFor(l)) {
      EXPECT_TRUE(seen.emplace(std::string(f->name), f->dir).second) << f->name;
    }
  }
}

// The notes' table (../shared/notes/elastic-agent.md, "Where the identity
// lives"): 7.x keeps its ID in Config (HOME) and its action store in Home
// (the versioned home); 8.3+ keeps fleet.enc with its vault/ in Config.
TEST(AgentFiles, TheIdentityIsWhereTheAgentKeepsIt) {
  auto find = [](Layout l, std::string_view name, AgentDir dir) {
    for (const AgentFile* f : AgentFilesFor(l)) {
      if (f->name == name && f->dir == dir) return f;
    }
    return static_cast<const AgentFile*>(nullptr);
  };
  for (Layout l : {Layout::kRun, Layout::kState}) {
    ASSERT_NE(find(l, "fleet.yml", AgentDir::kConfig), nullptr);
    EXPECT_EQ(find(l, "fleet.yml", AgentDir::kConfig)->role, FileRole::kIdentity);
    ASSERT_NE(find(l, "fleet.enc", AgentDir::kConfig), nullptr);
    ASSERT_NE(find(l, "vault", AgentDir::kConfig), nullptr);
    EXPECT_EQ(find(l, "vault", AgentDir::kConfig)->shape, FileShape::kDirectory);
    ASSERT_NE(find(l, "vault", AgentDir::kHome), nullptr) << "8.3.0 - 8.3.2";
    ASSERT_NE(find(l, "elastic-agent.yml", AgentDir::kConfig), nullptr);
    EXPECT_EQ(find(l, "elastic-agent.yml", AgentDir::kConfig)->role, FileRole::kEnrolment);
    ASSERT_NE(find(l, "action_store.yml", AgentDir::kHome), nullptr);
    EXPECT_EQ(find(l, "action_store.yml", AgentDir::kHome)->role, FileRole::kAgentState);
  }
  EXPECT_EQ(find(Layout::kRun, "fleet.yml", AgentDir::kHome), nullptr);
}

}  // namespace
}  // namespace agent_init
