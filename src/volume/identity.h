// Where the agent's own files (image/agent_files.h: its ID, enrolment and
// last policy) live for this start, and how each is kept on the volume. One
// placement step reads the table and handles each file by where the agent
// resolves it:
//   state layout, Config  CONFIG_PATH on the volume (unset: STATE_PATH, the
//                         agent's default) keeps it there; CONFIG_PATH outside
//                         the volume (ECK sets the image's home) is pointed at
//                         STATE for the command, and what an older start left
//                         there is carried over (volume/carry.h)
//   state layout, Home    STATE_PATH/data: the volume already
//   run layout, Config    Top = the image's HOME, beside the executable data/:
//                         with mount permission STATE/home is mounted over
//                         HOME with data/ attached again (volume/config_home.h);
//                         without it, nothing but a process that outlives the
//                         exec can keep it: --supervise copies every save to
//                         STATE/home (volume/identity_sync.h); in exec mode it
//                         is lost, with a warning
//   run layout, Home      the versioned home, which holds the executables: no
//                         mount can move it onto a noexec volume without
//                         breaking the 7.x installs (tmp and install must share
//                         a mount), so only --supervise keeps it
//                         (STATE/versioned-home)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/dir.h"
#include "base/error.h"
#include "config.h"
#include "image/agent_files.h"
#include "volume/config_home.h"
#include "volume/identity_sync.h"
#include "volume/volume.h"

namespace agent_init {

enum class Keeping {
  kOnVolume,    // the agent keeps it on the volume itself
  kConfigPath,  // CONFIG_PATH is pointed at the volume for the command
  kHomeMount,   // the agent's HOME is STATE/home, mounted over it
  kSupervisor,  // in the image; agent-init copies every save to the volume (--supervise)
  kLost,        // in the container's writable layer: lost when the container is recreated
};

/// "on the volume", "CONFIG_PATH", "home mount", "supervisor", "lost".
std::string_view KeepingName(Keeping keeping);

struct IdentityPlace {
  const AgentFile* file = nullptr;
  std::string agent_path;  // where the agent reads and saves it, as it sees it
  std::string volume_rel;  // where the volume keeps it, below STATE
  Keeping keeping = Keeping::kOnVolume;
};

struct IdentityOptions {
  Layout layout = Layout::kRun;
  std::string home;         // --home, as the agent sees it
  std::string vh_name;      // the versioned home's directory name
  std::string state;        // --state
  std::string config_path;  // CONFIG_PATH in agent-init's environment, absolute; empty when unset
  bool config_on_volume = false;  // CONFIG_PATH is STATE or a directory below it
  bool mounts = false;            // the run directory is bind-mounted: HOME can be too
  bool supervised = false;        // --supervise: agent-init outlives the exec
};

struct IdentityPlan {
  std::vector<IdentityPlace> places;
  std::string config_path;  // non-empty: CONFIG_PATH for the command (STATE), replacing the operator's
  bool home_mount = false;  // STATE/home goes over HOME
  std::vector<std::string> warnings;  // one per group of files that will not survive a recreation
};

/// CONFIG_PATH as the agent will read it (absolute; relative to the working
/// directory it inherits), empty when unset, and whether it is the volume or
/// below it, by name or by where it really is.
std::pair<std::string, bool> ResolveConfigPath(const Volume& volume);

/// Where each of the agent's files lives for a start with `o`, and how the
/// volume keeps it. Changes nothing.
IdentityPlan PlanIdentity(const IdentityOptions& o);

/// A variable of the command's environment: set to the value, or unset.
struct EnvChange {
  std::string name;
  std::optional<std::string> value;
};

/// What placing the agent's files leaves for the rest of the start.
struct PlacedIdentity {
  std::optional<ConfigHome> home;     // STATE/home, to mount over HOME last (after the run directory's bind)
  std::vector<SyncedPlace> synced;    // the places the supervisor keeps copying (kSupervisor)
  std::vector<EnvChange> environment; // CONFIG_PATH pointed at the volume; FLEET_ENROLL dropped
  // What was carried onto the volume as agent-init's user on this start
  // (below STATE), for the hand-over to --user.
  std::vector<std::string> carried;
};

/// Places the agent's files as `plan` says (the volume's lock held): carries
/// what an older start left outside the volume onto it, puts the volume's
/// copies in the agent's place, makes STATE/home ready to be mounted, logs
/// the plan's warnings and decides FLEET_ENROLL. `home` and `vh` are the
/// image's, as the agent sees them.
Result<PlacedIdentity> PlaceIdentity(const IdentityPlan& plan, const IdentityOptions& o, Volume& volume,
                                     const Dir& home, const Dir& vh);

/// FLEET_ENROLL=1 with the 7.10 - 7.12 entrypoint enrols a new agent at every
/// start (beats docker-entrypoint.elastic-agent.tmpl). What to do about it.
struct EnrolDecision {
  bool unset = false;   // drop FLEET_ENROLL from the command's environment
  std::string message;  // logged: info when unset, a warning otherwise; empty: nothing to say
};

/// For the run layout: `fleet_enroll` and `fleet_force` are the variables'
/// values (empty when unset); `enrolled` says the volume holds this agent's
/// enrolment (a fleet.yml with an API key that the agent will read);
/// `kept` says its enrolment survives a recreation.
EnrolDecision DecideFleetEnroll(std::string_view fleet_enroll, std::string_view fleet_force, bool enrolled,
                                bool kept, const std::string& fleet_yml);

}  // namespace agent_init
