// The configuration agent-init runs with: a plain struct that cmd/ fills
// from the command line and the environment, and passes down. No globals.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace agent_init {

/// agent-init's options that take their value as the next word, as the
/// command line defines them: for reading a command that runs agent-init
/// itself (generation.cc). A test keeps this list and --help in step.
inline constexpr std::array<std::string_view, 12> kValueOptions = {
    "--home",           "--state", "--versioned-home", "--method",     "--layout",     "--lock-timeout",
    "--keep-snapshots", "--user",  "--grace",          "--signal-map", "--log-format", "--log-level"};

/// Which layout the agent runs with (see generation.h).
enum class LayoutOption { kAuto, kRun, kState };

/// How STATE/run is put onto VH/run.
enum class Method {
  kAuto,     // bind mount when permitted, else symlink
  kBind,     // bind mount only
  kSymlink,  // symlink only
};

struct Config {
  std::string home = "/usr/share/elastic-agent";
  std::string state = "/usr/share/elastic-agent/state";
  std::string versioned_home;  // empty: discover it
  Method method = Method::kAuto;
  int lock_timeout = 30;      // seconds to wait for the volume lock; 0: fail at once
  int keep_snapshots = 2;     // snapshots of STATE/run kept on version changes; 0: none
  std::string user;           // --user USER[:GROUP]; empty: stay as we are
  std::string mode = "exec";  // for the lock's owner record: exec, prepare, supervise, restore
  LayoutOption layout = LayoutOption::kAuto;
  std::string seed_data;  // prepare --seed-data DIR; empty: none
};

}  // namespace agent_init
