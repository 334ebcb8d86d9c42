#include "commands/prepare.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "base/clock.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/mount_table.h"
#include "base/sys.h"
#include "image/exec_places.h"
#include "image/image.h"
#include "image/layout_decision.h"
#include "image/seed.h"
#include "volume/history.h"
#include "volume/identity.h"
#include "volume/layout_transition.h"
#include "volume/names.h"
#include "volume/ownership.h"
#include "volume/recovery.h"
#include "volume/state_path.h"
#include "volume/version_change.h"
#include "volume/volume.h"

namespace agent_init {
namespace {

// The image as the agent will see it.
struct Agent {
  std::string vh_name;
  Dir home;  // HOME, the image's
  Dir data;  // HOME/data, or the --seed-data copy of it
  Dir vh;    // opened from `data`
  LayoutDecision decision;
  bool seeded = false;  // the copy was made on this start
};

// The data directory the agent will see: the --seed-data copy of the
// image's, made when it is missing or stale.
Result<Dir> SeededData(const std::string& seed_path, const Dir& image_data, const std::string& vh_name,
                       bool& seeded) {
  auto seed = Dir::OpenTrusted(seed_path, Kind::kCannotPlace);
  if (!seed) {
    Error e = seed.error();
    e.hint = "mount the exec-capable emptyDir for the data directory copy there";
    return std::unexpected(Wrap(e, "--seed-data"));
  }
  auto copied = SeedData(image_data, *seed, vh_name);
  if (!copied) return std::unexpected(copied.error());
  seeded = *copied;
  return std::move(*seed);
}

// The image: its HOME, its data directory and the versioned home found in
// it (opened too, unless the agent will run from the --seed-data copy).
Result<Agent> OpenAgent(const Config& config) {
  OpenedImage opened =
      OpenImage(config.home, config.versioned_home, Listing::kWhenNeeded,
                config.seed_data.empty() ? VersionedHomeOpen::kOpen : VersionedHomeOpen::kNameOnly);
  Image& image = opened.image;
  for (const auto& w : image.discovery.warnings) log::Warn(w);
  if (opened.failure) return std::unexpected(opened.failure->Wrapped());
  Agent agent;
  agent.vh_name = *image.discovery.versioned_home;
  agent.home = std::move(image.home);
  agent.data = std::move(image.data);
  agent.vh = std::move(image.vh);
  log::Debug("found the versioned home",
             {{"path", agent.data.PathOf(agent.vh_name)}, {"evidence", std::string(RuleName(image.discovery.rule))}});
  return agent;
}

// The data directory and versioned home the agent runs from (with
// --seed-data, the copy, made now: the volume's lock is held), and its
// layout.
Result<void> SettleAgent(const Config& config, const std::vector<std::string>& command, Agent& agent) {
  if (!config.seed_data.empty()) {
    auto seeded = SeededData(config.seed_data, agent.data, agent.vh_name, agent.seeded);
    if (!seeded) return std::unexpected(seeded.error());
    agent.data = std::move(*seeded);
    auto vh = agent.data.OpenSub(agent.vh_name);
    if (!vh) return std::unexpected(Wrap(vh.error(), "open versioned home"));
    agent.vh = std::move(*vh);
  }
  agent.decision = DecideLayout(config.layout, command, config.value_options, agent.vh);
  log::Debug("layout", {{"layout", std::string(LayoutName(agent.decision.layout))},
                        {"evidence", agent.decision.evidence},
                        {"generation", std::string(GenerationName(agent.decision.generation))}});
  return {};
}

Result<void> CheckExecutablePlaces(const Agent& agent, const Volume& volume) {
  // The mount table is read only if statx and statvfs leave a rule open.
  std::optional<Result<MountTable>> table;
  auto source = [&]() -> const MountTable* {
    if (!table) table = MountTable::Read();
    return *table ? &**table : nullptr;
  };
  PlacesReport report =
      CheckPlaces(agent.data, agent.vh, volume.dir(), source, LinksExecDirs(agent.decision));
  for (const auto& w : report.warnings) log::Warn(w);
  if (report.problems.empty()) return {};
  Error e = MakeError(Kind::kLayout, 0, report.problems.front().message);
  for (size_t i = 1; i < report.problems.size(); ++i) e.also.push_back(report.problems[i].message);
  return std::unexpected(e);
}

// Everything the two layouts share, opened in order: the volume and its
// lock (before anything is written: a start refused for a held lock changes
// nothing), then an interrupted change finished, the history.
struct Taken {
  Volume volume;
  VolumeLock lock;
  std::optional<History> history;
};

Result<Taken> LockVolume(const std::string& state, int lock_timeout, Mode mode) {
  auto volume = Volume::Open(state);
  if (!volume) return std::unexpected(volume.error());
  if (auto made = volume->MakeBookkeeping(); !made) return std::unexpected(made.error());
  auto lock = VolumeLock::Acquire(volume->bookkeeping(), lock_timeout, mode);
  if (!lock) {
    return std::unexpected(
        volume->ExplainDenial(lock.error(), std::string(names::kBookkeeping) + "/" + names::kLock));
  }
  TestHook("volume locked");
  return Taken{std::move(*volume), std::move(*lock), std::nullopt};
}

Result<void> RecoverVolume(Taken& taken, const Agent& agent) {
  if (auto recovered = RecoverJournal(taken.volume, &agent.vh); !recovered) return recovered;
  auto history = ReadHistory(taken.volume.bookkeeping());
  if (!history) return std::unexpected(history.error());
  taken.history = std::move(*history);
  return {};
}

// Hands the state to --user; a fresh copy of the data directory too, as the
// agent (8.16+) would make its own home when it may chown.
Result<void> HandOverTo(const Credentials& user, const Volume& volume, const std::vector<const Dir*>& trees,
                        const std::vector<const Dir*>& tops, bool force_walk, const Agent& agent,
                        Privileged& ops) {
  Ids ids{user.uid, user.gid};
  if (auto handed = HandOver(volume, trees, tops, ids, force_walk, ops); !handed) return handed;
  if (!agent.seeded) return {};
  auto changed = ChownTree(agent.data, ids.uid, ids.gid, ops);
  if (!changed) return std::unexpected(Wrap(changed.error(), "hand the data directory copy to --user"));
  return {};
}

// What the two layouts' steps use of the options.
struct LayoutOptions {
  Method method;            // --method; the symlink for a --seed-data copy
  int keep_snapshots;       // --keep-snapshots
  const std::string& home;  // --home, as the agent sees it
  bool supervised;          // --supervise: agent-init outlives the exec
};

// The watcher that keeps copying the agent's saves, when there is anything
// to copy (--supervise, the run layout's places in the image).
Result<std::unique_ptr<Watcher>> StartSync(std::vector<SyncedPlace> synced) {
  if (synced.empty()) return std::unique_ptr<Watcher>{};
  auto sync = AgentFileSync::Start(std::move(synced));
  if (!sync) return std::unexpected(Wrap(sync.error(), "watch the agent's files"));
  return std::unique_ptr<Watcher>(std::move(*sync));
}

// Run layout: the volume's STATE/run in place of VH/run.
Result<Prepared> PrepareRunLayout(const LayoutOptions& options, const std::optional<Credentials>& user,
                                  Agent& agent, Taken& taken, Privileged& ops) {
  Volume& volume = taken.volume;
  auto state_run = volume.MakeRun(Layout::kRun);
  if (!state_run) {
    return std::unexpected(
        Wrap(volume.ExplainDenial(state_run.error(), Volume::RunRel(Layout::kRun)), "prepare run directory"));
  }
  auto snapshotted =
      HandleVersionChange(volume, taken.history, agent.vh_name, Layout::kRun, options.keep_snapshots);
  if (!snapshotted) return std::unexpected(snapshotted.error());
  if (auto checked = CheckExecutablePlaces(agent, volume); !checked) return std::unexpected(checked.error());
  auto placed = PlaceRun(options.method, agent.vh, *state_run, volume, UtcStamp(), ops);
  if (!placed) return std::unexpected(Wrap(placed.error(), "put run directory in place"));
  // The agent's own files: HOME's on the volume by a mount where the run
  // directory could be bind-mounted; else in the image, kept by the supervisor.
  const IdentityOptions io{.layout = Layout::kRun,
                           .home = options.home,
                           .vh_name = agent.vh_name,
                           .state = volume.path(),
                           .config_path = "",
                           .config_on_volume = false,
                           .mounts = placed->placement == Placement::kBind,
                           .supervised = options.supervised};
  const IdentityPlan plan = PlanIdentity(io);
  auto identity = PlaceIdentity(plan, io, volume, agent.home, agent.vh);
  if (!identity) return std::unexpected(identity.error());
  if (auto recorded = RecordVersion(volume, taken.history, agent.vh_name); !recorded)
    return std::unexpected(recorded.error());
  if (user) {
    bool walk = *snapshotted || placed->migration.has_value() || !identity->carried.empty();
    std::vector<const Dir*> trees{&*state_run};
    std::vector<Dir> kept;
    for (const char* rel : {names::kHome, names::kVersionedHome}) {
      if (auto dir = volume.dir().OpenSub(rel); dir) kept.push_back(std::move(*dir));
    }
    for (const Dir& d : kept) trees.push_back(&d);
    auto handed = HandOverTo(*user, volume, trees, trees, walk, agent, ops);
    if (!handed) return std::unexpected(handed.error());
  }
  // Last: the image's data/ attached over HOME again brings the run
  // directory's bind mount with it.
  if (identity->home && !identity->home->in_place) {
    if (auto mounted = MountConfigHome(agent.home, *identity->home, ops); !mounted)
      return std::unexpected(Wrap(mounted.error(), "put the agent's home on the volume"));
    // The run directory's first bind is under the new home now, hidden: the
    // copy attached with data/ is the one the agent sees.
    if (placed->placement == Placement::kBind && placed->changed) {
      int hidden = ::openat(agent.vh.fd(), names::kRun, O_PATH | O_NOFOLLOW | O_CLOEXEC);
      if (hidden >= 0) {
        UniqueFd fd(hidden);
        if (ops.Detach(fd.get()) < 0) log::Debug("could not detach the hidden bind of the run directory");
      }
    }
  }
  auto watcher = StartSync(std::move(identity->synced));
  if (!watcher) return std::unexpected(watcher.error());
  Prepared out;
  out.environment = std::move(identity->environment);
  out.watcher = std::move(*watcher);
  out.versioned_home = agent.vh.path();
  out.layout = Layout::kRun;
  out.placement = placed->placement;
  out.changed = placed->changed || agent.seeded;
  log::Info(out.changed ? "run directory in place" : "run directory already in place",
            {{"versioned_home", out.versioned_home},
             {"method", std::string(PlacementName(out.placement))},
             {"state", state_run->path()}});
  return out;
}

// The targets of the 7.x links, made (for the agent's user) when missing.
Result<void> MakeLinkTargets(const Agent& agent, const std::optional<Credentials>& user, Privileged& ops) {
  for (auto [dir, name] : {std::pair{&agent.data, names::kTmp}, std::pair{&agent.vh, names::kInstall}}) {
    if (::mkdirat(dir->fd(), name, 0770) == 0) {
      if (user) ops.Chown(dir->fd(), name, user->uid, user->gid, AT_SYMLINK_NOFOLLOW);
    } else if (errno != EEXIST) {
      int err = errno;
      return std::unexpected(ExplainImageDenial(
          MakeError(KindForErrno(err), err, "create " + Q(dir->PathOf(name))), dir->path()));
    }
  }
  return {};
}

// State layout: the volume is STATE_PATH; 7.x install and temp directories
// point back into the image.
Result<Prepared> PrepareStateLayout(const LayoutOptions& options, const std::optional<Credentials>& user,
                                    Agent& agent, Taken& taken, Privileged& ops) {
  Volume& volume = taken.volume;
  const std::string state_path = NormalizePath(volume.path());
  if (auto env = CheckStatePathEnvironment(volume.path()); !env) return std::unexpected(env.error());
  auto data = volume.MakeData();
  if (!data) {
    return std::unexpected(
        Wrap(volume.ExplainDenial(data.error(), names::kData), "prepare STATE_PATH data directory"));
  }
  auto run = volume.MakeRun(Layout::kState);
  if (!run) {
    return std::unexpected(
        Wrap(volume.ExplainDenial(run.error(), Volume::RunRel(Layout::kState)), "prepare run directory"));
  }
  if (auto marker = RefuseInstalledMarker(*data); !marker) return std::unexpected(marker.error());
  // The agent's Config (fleet.enc, vault/): CONFIG_PATH on the volume.
  const auto [config_path, config_on_volume] = ResolveConfigPath(volume);
  const IdentityOptions io{.layout = Layout::kState,
                           .home = options.home,
                           .vh_name = agent.vh_name,
                           .state = volume.path(),
                           .config_path = config_path,
                           .config_on_volume = config_on_volume,
                           .mounts = false,
                           .supervised = options.supervised};
  auto identity = PlaceIdentity(PlanIdentity(io), io, volume, agent.home, agent.vh);
  if (!identity) return std::unexpected(identity.error());
  auto snapshotted =
      HandleVersionChange(volume, taken.history, agent.vh_name, Layout::kState, options.keep_snapshots);
  if (!snapshotted) return std::unexpected(snapshotted.error());
  if (auto checked = CheckExecutablePlaces(agent, volume); !checked) return std::unexpected(checked.error());
  const bool links = LinksExecDirs(agent.decision);
  bool changed = agent.seeded;
  if (links) {
    if (auto made = MakeLinkTargets(agent, user, ops); !made) return std::unexpected(made.error());
    // As the agent sees them: under HOME (the seeded copy is mounted at HOME/data).
    auto linked = LinkExecDirs(*data, ExecLinks(options.home, agent.vh_name), volume, UtcStamp());
    if (!linked) return std::unexpected(Wrap(linked.error(), "point install and tmp at the image"));
    changed = changed || *linked;
  }
  if (auto recorded = RecordVersion(volume, taken.history, agent.vh_name); !recorded)
    return std::unexpected(recorded.error());
  if (user) {
    auto handed =
        HandOverTo(*user, volume, {&*data}, {&volume.dir(), &*data, &*run}, *snapshotted, agent, ops);
    if (!handed) return std::unexpected(handed.error());
    // What came from the old CONFIG_PATH was its owner's there.
    if (auto given = HandOverEntries(volume.dir(), identity->carried, {user->uid, user->gid}, ops); !given)
      return std::unexpected(given.error());
  }
  Prepared out;
  out.versioned_home = agent.vh.path();
  out.layout = Layout::kState;
  out.placement = links ? Placement::kSymlink : Placement::kNone;
  out.changed = changed;
  out.environment.push_back({"STATE_PATH", state_path});
  for (auto& e : identity->environment) out.environment.push_back(std::move(e));
  log::Info("state volume ready as STATE_PATH",
            {{"versioned_home", out.versioned_home},
             {"state_path", state_path},
             {"generation", std::string(GenerationName(agent.decision.generation))},
             {"install_and_tmp", links ? "linked to the image" : "not used (8.6+)"}});
  return out;
}

}  // namespace

Result<Prepared> Prepare(const Config& config, const std::optional<Credentials>& user,
                         const std::vector<std::string>& command, Privileged& ops) {
  auto agent = OpenAgent(config);
  if (!agent) return std::unexpected(agent.error());
  auto taken = LockVolume(config.state, config.lock_timeout, config.mode);
  if (!taken) return std::unexpected(taken.error());
  if (auto settled = SettleAgent(config, command, *agent); !settled) return std::unexpected(settled.error());
  if (auto recovered = RecoverVolume(*taken, *agent); !recovered) return std::unexpected(recovered.error());
  // A bind mount made in an init container would vanish with it: the seeded
  // copy gets the symlink, which the main container sees.
  const LayoutOptions options{config.seed_data.empty() ? config.method : Method::kSymlink,
                              config.keep_snapshots, config.home, config.mode == Mode::kSupervise};
  // An upgrade (or a rollback) that changed the layout: the state moves to
  // where this start's agent reads it, before anything else looks at it.
  auto carried =
      CarryOverLayout(taken->volume, agent->decision.layout, config.keep_snapshots, "layout-" + UtcStamp());
  if (!carried) return std::unexpected(Wrap(carried.error(), "carry the state over to the new layout"));
  auto prepared = agent->decision.layout == Layout::kState
                      ? PrepareStateLayout(options, user, *agent, *taken, ops)
                      : PrepareRunLayout(options, user, *agent, *taken, ops);
  if (!prepared) return prepared;
  prepared->lock = std::move(taken->lock);
  return prepared;
}

}  // namespace agent_init
