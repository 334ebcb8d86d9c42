// agent-init: the command line. Parses options and environment into a
// Config, runs one mode, prints the failure (once) and maps it to an exit
// code. Everything else lives in src/.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/dir.h"
#include "base/error.h"
#include "base/exit_codes.h"
#include "base/log.h"
#include "commands/eject.h"
#include "commands/inspect.h"
#include "commands/prepare.h"
#include "commands/restore.h"
#include "config.h"
#include "process/exec.h"
#include "process/privileges.h"
#include "process/signals.h"
#include "process/start_signals.h"
#include "process/supervise.h"
#include "process/users.h"
#include "version.h"
#include "version_text.h"

extern char** environ;

namespace {

using agent_init::Config;
using agent_init::Error;
using agent_init::Kind;
using agent_init::Mode;

struct Cli {
  Config config;
  bool json = false;
  std::string log_format = "text";
  std::string log_level = "info";
  std::string snapshot;           // restore NAME
  bool remove_snapshots = false;  // eject --remove-snapshots
  bool supervise = false;
  int grace = 10;
  bool signal_group = false;
  std::vector<std::string> signal_map;
  std::vector<std::string> command;
};

agent_init::log::Level ParseLevel(const std::string& s) {
  using agent_init::log::Level;
  if (s == "debug") return Level::kDebug;
  if (s == "warn") return Level::kWarn;
  if (s == "error") return Level::kError;
  if (s == "off") return Level::kOff;
  return Level::kInfo;
}

// Prints a failure once, in the chosen log format (after the further
// problems the same check found), and returns its exit code.
int Report(const Error& e) {
  for (const auto& other : e.also) agent_init::log::Error(other);
  int code = e.stopped_by != 0 ? 128 + e.stopped_by : agent_init::ExitCodeFor(e.kind);
  if (e.hint.empty()) {
    agent_init::log::Error(e.msg, {{"exit_code", std::to_string(code)}});
  } else {
    agent_init::log::Error(e.msg, {{"hint", e.hint}, {"exit_code", std::to_string(code)}});
  }
  return code;
}

// A SIGTERM or SIGINT that came while the volume was prepared (the volume
// is consistent: every change to it finished): the exit code 128+N, and the
// command does not start.
std::optional<int> StopIfAsked() {
  int sig = agent_init::TakeStopSignal();
  if (sig == 0) return std::nullopt;
  Error stopped = agent_init::MakeError(
      Kind::kBusy, 0,
      "stopped by " + agent_init::SignalName(sig) + " before the command started; the volume is ready for the next start");
  stopped.stopped_by = sig;
  return Report(stopped);
}

int UsageError(const std::string& msg, const std::string& hint = {}) {
  std::string text = hint.empty() ? msg : msg + "\n  " + hint;
  std::fprintf(stderr, "agent-init: %s\nRun 'agent-init --help' for usage.\n", text.c_str());
  return agent_init::ExitCodeFor(Kind::kUsage);
}

// The modes other than running a command, each a subcommand of the app.
constexpr std::array<std::string_view, 4> kModes{"prepare", "inspect", "restore", "eject"};

bool IsMode(std::string_view word) {
  for (std::string_view mode : kModes) {
    if (word == mode) return true;
  }
  return false;
}

// Where the command starts: the first positional argument that is not a
// mode, or the word after the first "--". Options before it belong to
// agent-init, everything from it on to the command, so that
// `agent-init --home X elastic-agent run -e` passes `-e` to the agent.
size_t CommandStart(const CLI::App& app, const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return i;
    if (a.size() > 1 && a[0] == '-') {
      if (a.find('=') != std::string::npos) continue;
      const CLI::Option* opt = app.get_option_no_throw(a);
      if (opt != nullptr && opt->get_expected_min() > 0) ++i;  // skip its value
      continue;
    }
    if (IsMode(a)) return args.size();  // a mode: it takes no command
    return i;
  }
  return args.size();
}

// Options may be relative to the working directory; the symlink agent-init
// creates must not be.
std::string Absolute(const std::string& path) {
  if (!path.empty() && path.front() == '/') return agent_init::NormalizePath(path);
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
  return agent_init::NormalizePath(std::string(cwd) + "/" + path);
}

// agent-init's own options, in the order --help lists them. Each is added
// to the parser only when the arguments or the environment name it (or
// --help lists them all): CLI11 builds every option with two copies of its
// names and checks it against every option added before it, so that building
// all fourteen was over a third of the instructions of a restart. What is not
// built keeps its default.
struct OptionSpec {
  std::string_view name;  // the long name, with "--"
  const char* env;        // its environment variable
  bool takes_value;       // false for a flag (the test of value_options checks this)
  CLI::Option* (*add)(CLI::App& app, Cli& cli, const std::string& name);
};

// An integer option from 0 to `max`, its default shown.
CLI::Option* AddCount(CLI::App& app, const std::string& name, int& value, const char* description, int max) {
  return app.add_option(name, value, description)->check(CLI::Range(0, max))->capture_default_str();
}

constexpr OptionSpec kOptions[] = {
    {"--home", "AGENT_INIT_HOME", true,
     [](CLI::App& app, Cli& cli, const std::string& name) {
       return app.add_option(name, cli.config.home, "The agent's home in the image")->capture_default_str();
     }},
    {"--state", "AGENT_INIT_STATE", true,
     [](CLI::App& app, Cli& cli, const std::string& name) {
       return app
           .add_option(name, cli.config.state,
                       "The persistent volume; the agent's run directory is STATE/run")
           ->capture_default_str();
     }},
    {"--versioned-home", "AGENT_INIT_VERSIONED_HOME", true,
     [](CLI::App& app, Cli& cli, const std::string& name) {
       return app.add_option(name, cli.config.versioned_home,
                             "Directory name under HOME/data to use; skips discovery");
     }},
    {"--method", "AGENT_INIT_METHOD", true,
     [](CLI::App& app, Cli& cli, const std::string& name) {
       std::map<std::string, agent_init::Method> methods{{"auto", agent_init::Method::kAuto},
                                                         {"bind", agent_init::Method::kBind},
                                                         {"symlink", agent_init::Method::kSymlink}};
       return app
           .add_option(name, cli.config.method, "How STATE/run is put on VH/run: auto, bind or symlink")
           ->transform(CLI::CheckedTransformer(methods, CLI::ignore_case).description(""))
           ->type_name("auto|bind|symlink")
           ->default_str("auto");
     }},
    {"--layout", "AGENT_INIT_LAYOUT", true,
     [](CLI::App& app, Cli& cli, const std::string& name) {
       std::map<std::string, agent_init::LayoutOption> layouts{{"auto", agent_init::LayoutOption::kAuto},
                                                               {"run", agent_init::LayoutOption::kRun},
                                                               {"state", agent_init::LayoutOption::kState}};
       return app
           .add_option(
               name, cli.config.layout,
               "run: the volume's run directory goes on VH/run (elastic-agent run); state: the volume is "
               "STATE_PATH (elastic-agent container, 7.13+); auto: from the command")
           ->transform(CLI::CheckedTransformer(layouts, CLI::ignore_case).description(""))
           ->type_name("auto|run|state")
           ->default_str("auto");
     }},
    {"--lock-timeout", "AGENT_INIT_LOCK_TIMEOUT", true,
     [](CLI::App& app, Cli& cli, const std::string& name) {
       return AddCount(app, name, cli.config.lock_timeout,
                       "Seconds to wait while another instance holds the volume (0: fail at once)", 86400);
     }},
    {"--keep-snapshots", "AGENT_INIT_KEEP_SNAPSHOTS", true,
     [](CLI::App& app, Cli& cli, const std::string& name) {
       return AddCount(app, name, cli.config.keep_snapshots,
                       "Snapshots of STATE/run kept when the versioned home changes (0: take none)",
                       agent_init::kMaxKeepSnapshots);
     }},
    {"--user", "AGENT_INIT_USER", true,
     [](CLI::App& app, Cli& cli, const std::string& name) {
       return app.add_option(name, cli.config.user,
                             "USER[:GROUP] to run the agent as; the state is handed to it (names from "
                             "/etc/passwd, /etc/group)");
     }},
    {"--supervise", "AGENT_INIT_SUPERVISE", false,
     [](CLI::App& app, Cli& cli, const std::string& name) {
       return app.add_flag(
           name, cli.supervise,
           "Stay as the command's parent: forward signals, reap orphans, stop the whole tree on exit");
     }},
    {"--grace", "AGENT_INIT_GRACE", true,
     [](CLI::App& app, Cli& cli, const std::string& name) {
       return AddCount(app, name, cli.grace,
                       "With --supervise: seconds from SIGTERM to SIGKILL for remaining processes", 86400);
     }},
    {"--signal-group", "AGENT_INIT_SIGNAL_GROUP", false,
     [](CLI::App& app, Cli& cli, const std::string& name) {
       return app.add_flag(name, cli.signal_group,
                           "With --supervise: forward signals to the command's process group");
     }},
    {"--signal-map", "AGENT_INIT_SIGNAL_MAP", true,
     [](CLI::App& app, Cli& cli, const std::string& name) {
       return app
           .add_option(name, cli.signal_map,
                       "With --supervise: FROM:TO rewrites a signal before forwarding; FROM:0 (or FROM:IGN) "
                       "drops it (repeatable; env: comma-separated)")
           ->delimiter(',');
     }},
    {"--log-format", "AGENT_INIT_LOG_FORMAT", true,
     [](CLI::App& app, Cli& cli, const std::string& name) {
       return app.add_option(name, cli.log_format, "Log format on stderr: text or json")
           ->check(CLI::IsMember({"text", "json"}))
           ->capture_default_str();
     }},
    {"--log-level", "AGENT_INIT_LOG_LEVEL", true,
     [](CLI::App& app, Cli& cli, const std::string& name) {
       return app.add_option(name, cli.log_level, "Log level: debug, info, warn, error or off")
           ->check(CLI::IsMember({"debug", "info", "warn", "error", "off"}))
           ->capture_default_str();
     }},
};

// Whether `arg` may be parsed as the option `name` ("--name" or
// "--name=VALUE"). Any argument counts, the command's too: an option built
// in vain costs a little time, one missing would be refused as unknown.
bool Names(std::string_view arg, std::string_view name) {
  return arg.starts_with(name) && (arg.size() == name.size() || arg[name.size()] == '=');
}

void AddOptions(CLI::App& app, Cli& cli, const std::vector<std::string>& args, bool all) {
  for (const OptionSpec& spec : kOptions) {
    bool named = all || std::getenv(spec.env) != nullptr;
    for (size_t i = 0; !named && i < args.size(); ++i) named = Names(args[i], spec.name);
    if (named) spec.add(app, cli, std::string(spec.name))->envname(spec.env);
  }
}

// The long names (without "--") of agent-init's own options that take a
// value, built or not.
std::vector<std::string_view> ValueOptions() {
  std::vector<std::string_view> out;
  for (const OptionSpec& spec : kOptions) {
    if (spec.takes_value) out.push_back(spec.name.substr(2));
  }
  return out;
}

// The modes other than running a command (null where not added).
struct Modes {
  CLI::App* prepare = nullptr;
  CLI::App* inspect = nullptr;
  CLI::App* restore = nullptr;
  CLI::App* eject = nullptr;
};

Modes AddModes(CLI::App& app, Cli& cli) {
  Modes m;
  m.prepare = app.add_subcommand("prepare", "Prepare the state, then exit 0");
  m.inspect = app.add_subcommand("inspect", "Report what is there and what prepare would do");
  m.prepare
      ->add_option("--seed-data", cli.config.seed_data,
                   "Copy the image's HOME/data into DIR (an exec-capable emptyDir) for a read-only root")
      ->envname("AGENT_INIT_SEED_DATA");
  m.inspect->add_flag("--json", cli.json, "Print one JSON object")->envname("AGENT_INIT_JSON");
  m.inspect->add_option("COMMAND", cli.command,
                        "After --: the command prepare would run (decides --layout auto)");
  m.restore = app.add_subcommand(
      "restore", "Put snapshot NAME back as STATE/run (keeping the current one as a snapshot)");
  m.restore->add_option("NAME", cli.snapshot, "Snapshot name (inspect lists them)")->required();
  m.eject = app.add_subcommand(
      "eject", "Leave the volume in the agent's own layout (STATE_PATH), remove agent-init's bookkeeping");
  m.eject->add_flag("--remove-snapshots", cli.remove_snapshots, "Remove the snapshots too")
      ->envname("AGENT_INIT_REMOVE_SNAPSHOTS");
  m.eject->add_option("COMMAND", cli.command, "After --: the command the image runs (decides --layout auto)");
  for (CLI::App* sub : {m.prepare, m.inspect, m.restore, m.eject}) sub->fallthrough();
  app.require_subcommand(0, 1);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  // First of all: as PID 1, a signal without a handler is dropped. Blocked,
  // it waits for the lock wait, the check before the command, or the
  // supervisor (process/start_signals.h).
  const agent_init::CallerSignals caller = agent_init::BlockSignals();
  Cli cli;
  CLI::App app{"agent-init " AGENT_INIT_VERSION
               ": keeps an agent's state on a persistent volume and starts the agent.\n\n"
               "  agent-init [OPTIONS] [--] COMMAND [ARG...]   prepare, then exec COMMAND (PATH lookup)\n"
               "  agent-init prepare [OPTIONS]                 prepare, then exit 0 (init containers)\n"
               "  agent-init inspect [OPTIONS] [--json]        report what is there; change nothing\n"
               "  agent-init restore [OPTIONS] NAME            put snapshot NAME back as STATE/run\n"
               "  agent-init eject [OPTIONS] [--remove-snapshots]  leave the volume to the agent alone\n"
               "  agent-init --help | --version\n",
               "agent-init"};
  app.set_version_flag("--version", "");

  std::vector<std::string> args(argv + 1, argv + argc);
  bool wants_help = false;
  for (const std::string& a : args) wants_help = wants_help || a == "-h" || a == "--help";
  AddOptions(app, cli, args, /*all=*/wants_help);
  size_t start = CommandStart(app, args);
  std::vector<std::string> ours(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(start));
  if (start < args.size()) {
    size_t first = args[start] == "--" ? start + 1 : start;
    cli.command.assign(args.begin() + static_cast<std::ptrdiff_t>(first), args.end());
  }

  // The modes are added only when agent-init's own arguments name one or ask
  // for help: every restart of the agent parses without them, and building
  // them (each with its own help flag and options) was a fifth of the
  // instructions of a restart. A word that only looks like a mode (an
  // option's value) merely builds them: the parse is then the same as ever.
  bool with_modes = false;
  for (const std::string& a : ours) with_modes = with_modes || IsMode(a) || a == "-h" || a == "--help";
  const Modes modes = with_modes ? AddModes(app, cli) : Modes{};

  try {
    std::vector<std::string> reversed(ours.rbegin(), ours.rend());  // CLI11 parses from the back
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    // Built only when --help asks for it, not at every start.
    app.footer(agent_init::ExitCodeHelp() +
               "\n\nEvery option also reads the environment variable shown as Env.");
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion&) {
    std::printf("%s\n", agent_init::VersionText().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    return UsageError(e.what());
  }

  Config& config = cli.config;
  auto parsed = [](const CLI::App* sub) { return sub != nullptr && sub->parsed(); };
  config.mode = parsed(modes.prepare)   ? Mode::kPrepare
                : parsed(modes.inspect) ? Mode::kInspect
                : parsed(modes.restore) ? Mode::kRestore
                : parsed(modes.eject)   ? Mode::kEject
                : cli.supervise         ? Mode::kSupervise
                                        : Mode::kExec;
  const bool runs_command = config.mode == Mode::kExec || config.mode == Mode::kSupervise;
  if (!runs_command && config.mode != Mode::kInspect && config.mode != Mode::kEject && !cli.command.empty()) {
    return UsageError("unexpected arguments after the mode: " + cli.command.front());
  }
  if (runs_command && cli.command.empty()) {
    return UsageError("no command given: agent-init [OPTIONS] -- COMMAND [ARG...], or agent-init prepare");
  }
  if (!config.versioned_home.empty() && !agent_init::IsPlainName(config.versioned_home)) {
    return UsageError("--versioned-home must be one directory name under HOME/data, not " +
                      agent_init::Q(config.versioned_home));
  }
  auto signal_map = agent_init::ParseSignalMap(cli.signal_map);
  if (!signal_map) return UsageError(signal_map.error().msg, signal_map.error().hint);
  // An empty --user is a mistake, not "stay as we are"; CLI11 passes over an
  // empty environment variable, so AGENT_INIT_USER= is looked at here.
  const char* env_user = std::getenv("AGENT_INIT_USER");
  const bool uses_user = config.mode != Mode::kInspect && config.mode != Mode::kEject;
  if (uses_user && (app.get_option_no_throw("--user") != nullptr && app.count("--user") > 0
                        ? config.user.empty()
                        : (env_user != nullptr && *env_user == '\0'))) {
    return UsageError("--user is empty (or AGENT_INIT_USER is set to nothing)",
                      "give USER or USER:GROUP, or leave the option out to keep agent-init's own user");
  }
  config.home = Absolute(config.home);
  config.state = Absolute(config.state);
  config.value_options = ValueOptions();
  agent_init::log::Init(
      cli.log_format == "json" ? agent_init::log::Format::kJson : agent_init::log::Format::kText,
      ParseLevel(cli.log_level));

  if (auto refused = agent_init::RefuseSetuidStart(); !refused) return Report(refused.error());
  // Only a start that runs the agent (or prepares for it) takes its signals
  // itself; inspect, restore and eject are a command an operator runs, which
  // SIGINT and SIGTERM stop as they stop any (a restore or eject cut short
  // is finished by the journal at the next start).
  if (config.mode == Mode::kInspect || config.mode == Mode::kRestore || config.mode == Mode::kEject) {
    agent_init::RestoreSignals(caller);
  }

  if (config.mode == Mode::kInspect) {
    agent_init::InspectReport report = agent_init::Inspect(config, cli.command);
    std::string out = cli.json ? agent_init::RenderJson(report) : agent_init::RenderText(report);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return report.problems.empty() ? 0 : agent_init::ExitCodeFor(Kind::kLayout);
  }

  if (config.mode == Mode::kEject) {
    auto ejected = agent_init::Eject(config, cli.command, cli.remove_snapshots);
    if (!ejected) return Report(ejected.error());
    std::string out = agent_init::ManifestChange(*ejected);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }

  if (config.mode == Mode::kRestore) {
    if (auto named = agent_init::CheckSnapshotName(cli.snapshot); !named) return Report(named.error());
  }
  // --user: resolved once, before anything is touched (an unknown name
  // fails here), for the hand-over and the switch alike.
  std::optional<agent_init::Credentials> user;
  if (!config.user.empty()) {
    auto resolved = agent_init::ResolveUserFromFiles(config.user);
    if (!resolved) return Report(resolved.error());
    user = std::move(*resolved);
  }

  if (config.mode == Mode::kRestore) {
    auto restored = agent_init::Restore(config, user, cli.snapshot);
    return restored ? 0 : Report(restored.error());
  }

  auto prepared = agent_init::Prepare(config, user, cli.command);
  if (!prepared) return Report(prepared.error());
  if (config.mode == Mode::kPrepare) return StopIfAsked().value_or(0);  // the lock is released on exit

  for (const auto& change : prepared->environment) {
    if (change.value) {
      ::setenv(change.name.c_str(), change.value->c_str(), 1);
    } else {
      ::unsetenv(change.name.c_str());
    }
  }
  if (config.mode == Mode::kSupervise) {
    // From here the supervisor forwards what comes to the command.
    if (auto stopped = StopIfAsked()) return *stopped;
    agent_init::SuperviseOptions options{cli.grace,           cli.signal_group,          std::move(*signal_map),
                                         {prepared->lock.fd()}, prepared->watcher.get(), caller};
    auto status = agent_init::Supervise(cli.command, user, options);
    return status ? *status : Report(status.error());
  }
  if (user) {
    if (auto dropped = agent_init::DropPrivileges(*user); !dropped) return Report(dropped.error());
  }
  // The agent keeps holding the volume lock: the fd survives the exec.
  prepared->lock.ReleaseToExec();
  agent_init::log::Flush();
  // The last look, right before the caller's mask comes back: as PID 1 a
  // SIGTERM pending then would be dropped by the kernel on the way to exec.
  if (auto stopped = StopIfAsked()) return *stopped;
  agent_init::RestoreSignals(caller);
  return Report(agent_init::ExecCommand(cli.command, environ));
}
