// The configuration agent-init runs with: a plain struct that cmd/ fills
// from the command line and the environment, and passes down (no globals),
// and the small vocabulary every part shares.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace agent_init {

/// What this run of agent-init does; also recorded as the volume lock's owner.
enum class Mode {
  kExec,       // prepare, then exec the command
  kSupervise,  // prepare, then stay as the command's parent
  kPrepare,    // prepare, then exit 0
  kInspect,    // report, change nothing
  kRestore,    // put a snapshot back
  kEject,      // leave the volume in the agent's own layout, without agent-init
};

/// "exec", "supervise", "prepare", "inspect", "restore", "eject".
std::string_view ModeName(Mode mode);

/// --layout: which layout the agent runs with, or `auto` to decide it.
enum class LayoutOption { kAuto, kRun, kState };

/// The layout decided (image/layout_decision.h): where the agent keeps its
/// run state, and so where the volume's copy of it lives (volume/volume.h).
enum class Layout {
  kRun,    // `elastic-agent run`: VH/run; the volume's STATE/run
  kState,  // `elastic-agent container`: $STATE_PATH/data/run; the volume is STATE_PATH
};

/// "run" or "state".
std::string_view LayoutName(Layout layout);

/// --method: how STATE/run is put onto VH/run.
enum class Method {
  kAuto,     // bind mount when permitted, else symlink
  kBind,     // bind mount only
  kSymlink,  // symlink only
};

/// The largest --keep-snapshots. A restore keeps one more snapshot than
/// asked (the one of what it replaced), so the journal accepts one more.
inline constexpr int kMaxKeepSnapshots = 1000;

struct Config {
  Mode mode = Mode::kExec;
  std::string home = "/usr/share/elastic-agent";
  std::string state = "/usr/share/elastic-agent/state";
  std::string versioned_home;  // empty: discover it
  Method method = Method::kAuto;
  LayoutOption layout = LayoutOption::kAuto;
  int lock_timeout = 30;   // seconds to wait for the volume lock; 0: fail at once
  int keep_snapshots = 2;  // snapshots of STATE/run kept on version changes; 0: none
  std::string user;        // --user USER[:GROUP]; empty: stay as we are
  std::string seed_data;   // prepare --seed-data DIR; empty: none
  // The long names (without "--") of agent-init's own options that take a
  // value, as the command line defines them: for reading a command that runs
  // agent-init itself. They point into cmd/'s option table.
  std::vector<std::string_view> value_options;
};

}  // namespace agent_init
