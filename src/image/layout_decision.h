// Which layout the agent runs with, and which generation the image is:
//   layout run    `elastic-agent run` (7.10 - 7.12 images, or any image whose
//                 entrypoint runs the agent that way): state in VH/run
//   layout state  `elastic-agent container` (7.13+): state under $STATE_PATH/data
//   v1            7.x - 8.5: VH/install or VH/downloads, no VH/components
//   v2            8.6+: pre-extracted components in VH/components
// `auto` reads what will be executed: the command (through tini, dumb-init,
// catatonit, `sh -c` and entrypoint scripts), or, without a command
// (prepare), the image's /usr/local/bin/docker-entrypoint.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/dir.h"
#include "config.h"

namespace agent_init {

enum class Generation { kUnknown, kV1, kV2 };

std::string_view GenerationName(Generation generation);

struct LayoutDecision {
  Layout layout = Layout::kRun;
  std::string evidence;  // why
  Generation generation = Generation::kUnknown;
  std::string generation_evidence;
};

/// What an entrypoint script runs: the last `elastic-agent run|container`
/// outside comments. std::nullopt when it runs neither.
std::optional<Layout> LayoutFromScript(std::string_view script);

/// Reads a file's first bytes (scripts); empty when it cannot be read.
using FileReader = std::function<std::string(const std::string& path)>;

/// What `command` will run, looking through init wrappers, `sh -c` and
/// entrypoint scripts (read with `read`). `value_options` are the long names
/// (without "--") of agent-init's own options that take a value
/// (Config::value_options), for a command that runs agent-init itself. `evidence` says what decided.
std::optional<Layout> LayoutFromCommand(const std::vector<std::string>& command, const FileReader& read,
                                        const std::vector<std::string_view>& value_options,
                                        std::string& evidence);

/// The image's generation from the versioned home's directories.
Generation GenerationOf(const Dir& vh, std::string& evidence);

/// The whole decision for `option` (auto reads the command, or without one
/// the image's default entrypoint at `default_entrypoint`). The generation is
/// looked up for the state layout, where it matters, or when `generation` is
/// kAlways (inspect).
enum class GenerationLookup { kWhenNeeded, kAlways };
inline constexpr const char* kDefaultEntrypoint = "/usr/local/bin/docker-entrypoint";
LayoutDecision DecideLayout(LayoutOption option, const std::vector<std::string>& command,
                            const std::vector<std::string_view>& value_options, const Dir& vh,
                            GenerationLookup generation = GenerationLookup::kWhenNeeded,
                            const std::string& default_entrypoint = kDefaultEntrypoint);

/// The state layout with a 7.x agent: agent-init links the agent's install
/// and temp directories into the image (volume/state_path.h), so those two
/// must share a mount (the EXDEV rule is a problem there, a warning elsewhere).
bool LinksExecDirs(const LayoutDecision& decision);

}  // namespace agent_init
