// The files Elastic Agent writes outside its run directory, by generation, as
// the agent's source places them (../shared/notes/elastic-agent.md, "Where
// the identity lives"). The run directory (the components' state) is put in
// place by volume/placement; these are the agent's own: its ID and Fleet
// enrolment, the configuration enrolment rewrites, the last policy. A new
// agent version that moves a file is a new row here, not new code:
// volume/identity places every row by its kind, and inspect, eject and the
// demo read the same table.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "config.h"

namespace agent_init {

/// The agent's own names for the directories it resolves a file from.
enum class AgentDir {
  kConfig,  // paths.Config(): Top (the image's HOME) for `run`; CONFIG_PATH, default STATE_PATH, for `container`
  kHome,    // paths.Home(): the versioned home for `run`; STATE_PATH/data for `container`
};

enum class FileShape { kFile, kDirectory };

/// What losing the file costs.
enum class FileRole {
  kIdentity,   // the agent's ID and Fleet enrolment: a new agent in Fleet when lost
  kEnrolment,  // the configuration enrolment rewrites to `fleet.enabled: true`
  kAgentState, // the agent's own state: the last policy change, acknowledged actions
};

struct AgentFile {
  std::string_view name;
  AgentDir dir;
  FileShape shape;
  FileRole role;
  std::string_view saved;     // how the agent writes it
  std::string_view versions;  // which agents write it there
  std::string_view source;    // where the agent's source says so
};

/// A generation: the agents that run one way and keep the same files.
struct AgentGeneration {
  std::string_view versions;  // "7.10 - 7.12"
  Layout layout;              // `elastic-agent run` (kRun) or `container` (kState)
  std::span<const AgentFile> files;
};

/// Every generation, oldest first.
std::span<const AgentGeneration> AgentGenerations();

/// The files of every generation that runs with `layout`, each (name,
/// directory) once, in table order: agent-init cannot tell 7.11 from 7.12 by
/// the image, and a file a version does not write is simply not there.
std::vector<const AgentFile*> AgentFilesFor(Layout layout);

/// "config" or "home"; "identity", "enrolment" or "agent state".
std::string_view AgentDirName(AgentDir dir);
std::string_view FileRoleName(FileRole role);

/// What a recreation costs when the file is lost, in the words of the role.
std::string_view LossOf(FileRole role);

}  // namespace agent_init
