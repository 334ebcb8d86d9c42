// `agent-init inspect`: what is there and what prepare would do, without
// changing anything. Every failure prepare would stop at is a problem here.
// Inspect gathers the report; two renderers print it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/privileged.h"
#include "config.h"
#include "image/exec_places.h"
#include "image/layout_decision.h"
#include "image/versioned_home.h"
#include "volume/history.h"
#include "volume/lock.h"
#include "volume/snapshot.h"

namespace agent_init {

/// One of the agent's own files (image/agent_files.h), for this image and
/// volume: where the agent will look for it and what a recreation loses.
struct IdentityEntry {
  std::string file;        // its name
  std::string role;        // identity, enrolment, agent state
  std::string versions;    // the agents that write it there
  std::string agent_path;  // where the agent will read and save it
  bool on_volume = false;  // that place is the volume's (the agent's own, CONFIG_PATH or the home mount)
  std::string kept;        // how: Keeping's name; "lost (kept with --supervise)" for exec mode
  std::string volume_path; // where the volume keeps it
  bool present = false;    // the volume holds it now
  std::string loss;        // what a recreation of the container loses: "nothing", or what
};

struct InspectReport {
  std::string home;
  std::string data;
  Discovery discovery;
  std::optional<std::string> versioned_home;  // path
  std::string state;
  std::string state_run;
  std::string state_filesystem;  // the volume's (sys::FilesystemName), when it opened
  std::string state_reflink;     // whether its snapshots can share extents (ReflinkOf)
  LayoutDecision layout;         // run or state, and the image's generation
  std::string method;            // what prepare would use
  std::string method_reason;     // why
  bool prepared = false;         // VH/run is already the volume's run directory
  std::vector<Place> places;
  LockStatus lock;
  std::optional<History> history;
  std::vector<SnapshotInfo> snapshots;
  std::optional<std::string> pending_change;  // an unfinished journal entry
  std::optional<std::string> last_layout;     // the layout that last used the volume, when recorded
  std::optional<std::string> layout_change;   // what prepare would carry over to this layout
  std::vector<IdentityEntry> identity;               // the agent's own files
  std::optional<std::string> config_path_for_agent;  // CONFIG_PATH the agent gets, when agent-init sets it
  std::vector<Problem> problems;
  std::vector<std::string> warnings;
};

/// Gathers the report. `command` is what would be executed (empty: the
/// image's entrypoint); `ops` answers whether mounting is permitted.
InspectReport Inspect(const Config& config, const std::vector<std::string>& command,
                      Privileged& ops = Kernel());

/// The report as one JSON object, and as aligned text (inspect_render.cc).
std::string RenderJson(const InspectReport& report);
std::string RenderText(const InspectReport& report);

}  // namespace agent_init
