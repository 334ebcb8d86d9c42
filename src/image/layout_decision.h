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

#include "config.h"
#include "base/dir.h"

namespace agent_init {

enum class Layout { kRun, kState };
enum class Generation { kUnknown, kV1, kV2 };

std::string_view LayoutName(Layout layout);
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
/// entrypoint scripts (read with `read`). `evidence` says what decided.
std::optional<Layout> LayoutFromCommand(const std::vector<std::string>& command, const FileReader& read,
                                        std::string& evidence);

/// The image's generation from the versioned home's directories.
Generation GenerationOf(const Dir& vh, std::string& evidence);

/// The whole decision for `option` (auto reads the command, or without one
/// the image's default entrypoint at `default_entrypoint`). The generation is
/// looked up for the state layout, where it matters, or when `generation` is
/// kAlways (inspect).
enum class GenerationLookup { kWhenNeeded, kAlways };
inline constexpr const char* kDefaultEntrypoint = "/usr/local/bin/docker-entrypoint";
LayoutDecision DecideLayout(LayoutOption option, const std::vector<std::string>& command, const Dir& vh,
                            const std::string& default_entrypoint = kDefaultEntrypoint,
                            GenerationLookup generation = GenerationLookup::kWhenNeeded);

}  // namespace agent_init
