#include "image/agent_files.h"

#include <algorithm>

#include "base/enum_names.h"

namespace agent_init {
namespace {

// Sources: P = x-pack/elastic-agent/pkg/agent in elastic/beats (7.x, at the
// master commits cut into each release branch: bb79569dcf for 7.10 - 7.11,
// 282a7bcf34 for 7.12, 2fb65dcb98 for 7.13); A = internal/pkg/agent in
// elastic/elastic-agent at the tag named.
constexpr std::string_view kTmpRename = "NAME.tmp, then a rename over NAME";

constexpr AgentFile kFleetYml{"fleet.yml", AgentDir::kConfig, FileShape::kFile, FileRole::kIdentity, kTmpRename,
                              "7.10 - 8.2 (8.3+ migrate it to fleet.enc)",
                              "beats bb79569dcf P/application/info/agent_id.go:39-41, P/storage/storage.go:159-190"};
constexpr AgentFile kAgentYml{
    "elastic-agent.yml", AgentDir::kConfig, FileShape::kFile, FileRole::kEnrolment,
    "enrolment renames it to NAME.<time>.bak and writes NAME in place; `container` copies the image's when missing",
    "7.10+", "beats bb79569dcf P/application/enroll_cmd.go:104-108, P/storage/storage.go:81-144"};
constexpr AgentFile kActionStore{"action_store.yml", AgentDir::kHome, FileShape::kFile, FileRole::kAgentState,
                                 kTmpRename, "7.10 - 8.2",
                                 "beats bb79569dcf P/application/info/agent_id.go:44-46"};
constexpr AgentFile kStateYml{"state.yml", AgentDir::kHome, FileShape::kFile, FileRole::kAgentState, kTmpRename,
                              "7.12 - 8.2", "beats 282a7bcf34 P/application/info/agent_id.go:59-61"};
constexpr AgentFile kFleetEnc{
    "fleet.enc", AgentDir::kConfig, FileShape::kFile, FileRole::kIdentity,
    "NAME.tmp, encrypted with the key in vault/, then a rename over NAME", "8.3+",
    "elastic-agent v8.19.20 A/application/paths/files.go:59-61, A/storage/encrypted_disk_store.go:129-203"};
constexpr AgentFile kVault{"vault", AgentDir::kConfig, FileShape::kDirectory, FileRole::kIdentity,
                           "a seed and one file per key, each a temporary file renamed into place", "8.3.3+",
                           "elastic-agent v8.19.20 A/application/paths/paths.go:19-21, A/vault/vault_file.go:45-78"};
constexpr AgentFile kVaultInHome{"vault", AgentDir::kHome, FileShape::kDirectory, FileRole::kIdentity,
                                 "as Config/vault", "8.3.0 - 8.3.2",
                                 "elastic-agent v8.3.0 A/application/paths/paths_linux.go:16-17"};
constexpr AgentFile kStateEnc{"state.enc", AgentDir::kHome, FileShape::kFile, FileRole::kAgentState,
                              "NAME.tmp, encrypted, then a rename over NAME", "8.3+",
                              "elastic-agent v8.19.20 A/application/paths/files.go:82-94"};

// `elastic-agent run`: Config = Top = two levels above the resolved binary,
// Home = the versioned home (beats bb79569dcf P/application/paths/paths.go:29-37,
// 57-58, 79-107; elastic-agent v8.19.20 A/application/paths/common.go:290-326).
constexpr AgentFile kRun710[] = {kFleetYml, kAgentYml, kActionStore, kStateYml};
constexpr AgentFile kRun83[] = {kFleetEnc, kVault, kVaultInHome, kFleetYml, kAgentYml, kStateEnc};
// `elastic-agent container`: Config = CONFIG_PATH (default STATE_PATH), Home
// = STATE_PATH/data (beats 2fb65dcb98 P/cmd/container.go:631-668; elastic-agent
// v8.19.20 A/cmd/container.go:892-939).
constexpr AgentFile kContainer713[] = {kFleetYml, kAgentYml, kActionStore, kStateYml};
constexpr AgentFile kContainer83[] = {kFleetEnc, kVault, kVaultInHome, kFleetYml, kAgentYml, kStateEnc};

constexpr AgentGeneration kGenerations[] = {
    {"7.10 - 7.12", Layout::kRun, kRun710},
    {"7.13 - 8.2", Layout::kState, kContainer713},
    {"8.3+", Layout::kState, kContainer83},
    {"8.3+ (installed homes run with `elastic-agent run`)", Layout::kRun, kRun83},
};

}  // namespace

std::span<const AgentGeneration> AgentGenerations() { return kGenerations; }

std::vector<const AgentFile*> AgentFilesFor(Layout layout) {
  std::vector<const AgentFile*> out;
  for (const AgentGeneration& g : kGenerations) {
    if (g.layout != layout) continue;
    for (const AgentFile& f : g.files) {
      bool seen = std::any_of(out.begin(), out.end(),
                              [&](const AgentFile* o) { return o->name == f.name && o->dir == f.dir; });
      if (!seen) out.push_back(&f);
    }
  }
  return out;
}

std::string_view AgentDirName(AgentDir dir) {
  static constexpr EnumName<AgentDir> kNames[] = {{AgentDir::kConfig, "config"}, {AgentDir::kHome, "home"}};
  return NameOf(dir, kNames);
}

std::string_view FileRoleName(FileRole role) {
  static constexpr EnumName<FileRole> kNames[] = {
      {FileRole::kIdentity, "identity"}, {FileRole::kEnrolment, "enrolment"}, {FileRole::kAgentState, "agent state"}};
  return NameOf(role, kNames);
}

std::string_view LossOf(FileRole role) {
  switch (role) {
    case FileRole::kIdentity:
      return "the agent ID and its Fleet enrolment: the agent starts as a new agent (or enrols again)";
    case FileRole::kEnrolment:
      return "the switch to Fleet mode: a 7.10 - 7.12 agent starts standalone";
    case FileRole::kAgentState:
      return "the last policy and acknowledged actions: fetched again from Fleet";
  }
  return "";
}

}  // namespace agent_init
