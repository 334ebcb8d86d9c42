#include "commands/prepare.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "base/atomic_file.h"
#include "base/clock.h"
#include "image/exec_places.h"
#include "volume/history.h"
#include "volume/journal.h"
#include "image/versioned_home.h"
#include "base/log.h"
#include "volume/migrate.h"
#include "base/mount_table.h"
#include "volume/ownership.h"
#include "base/record.h"
#include "image/seed.h"
#include "volume/snapshot.h"
#include "volume/state_path.h"

namespace agent_init {
namespace {

constexpr const char* kChownedMarker = "chowned";

Result<void> CheckExecutablePlaces(const Dir& data, const Dir& vh, const Dir& state, bool exdev_is_error) {
  // The mount table is read only if statx and statvfs leave a rule open.
  std::optional<Result<MountTable>> table;
  auto source = [&]() -> const MountTable* {
    if (!table) table = MountTable::Read();
    return *table ? &**table : nullptr;
  };
  PlacesReport report = CheckPlaces(data, vh, state, source);
  for (const auto& w : report.warnings) log::Warn(w);
  if (report.exdev) {
    // The state layout points the agent's own install and temp paths at
    // these: there a rename between them must not cross mounts.
    if (exdev_is_error) {
      report.problems.push_back(*report.exdev);
    } else {
      log::Warn(report.exdev->message);
    }
  }
  if (report.problems.empty()) return {};
  for (size_t i = 1; i < report.problems.size(); ++i) log::Error(report.problems[i].message);
  return Fail(Kind::kLayout, report.problems.front().message);
}

// A different versioned home than last time: keep the state as it was under
// the previous one before the new version touches it.
Result<bool> HandleVersionChange(const Config& config, const std::optional<History>& history,
                                 const std::string& vh_name, const Dir& state, const RunParent& run_parent,
                                 const Dir& aidir, Journal& journal) {
  if (!history || history->current == vh_name || history->current.empty()) return false;
  const std::string& previous = history->current;
  log::Info("a different versioned home starts on this volume", {{"previous", previous}, {"now", vh_name}});
  bool snapshotted = false;
  if (config.keep_snapshots > 0) {
    auto taken = TakeSnapshot(state, run_parent, aidir, journal, previous, config.keep_snapshots);
    if (!taken) return std::unexpected(taken.error());
    log::Info("snapshot of the previous version's state taken",
              {{"snapshot", aidir.PathOf("snapshots/" + previous)}});
    snapshotted = true;
  }
  bool returning = std::any_of(history->changes.begin(), history->changes.end(),
                               [&](const HistoryEntry& c) { return c.from == vh_name; });
  if (returning) {
    auto snapshots = ListSnapshots(aidir);
    bool have = snapshots && std::any_of(snapshots->begin(), snapshots->end(),
                                         [&](const SnapshotInfo& s) { return s.name == vh_name; });
    log::Warn("going back to an older versioned home: it runs on the newer version's state",
              {{"from", previous},
               {"to", vh_name},
               {"older_state", have ? aidir.PathOf("snapshots/" + vh_name) : std::string("no snapshot kept")},
               {"restore_with", "agent-init restore " + vh_name}});
  }
  return snapshotted;
}

// The chown walk is skipped on restarts: a marker records the ids the whole
// tree was last given, and agent-init's own new files are handed over below.
Result<void> WriteChownedMarker(const Dir& aidir, const Credentials& user) {
  return WriteFileAtomic(
      aidir, kChownedMarker,
      EncodeRecord({{"uid", std::to_string(user.uid)}, {"gid", std::to_string(user.gid)}}));
}

bool ChownedMarkerMatches(const Dir& aidir, const Credentials& user) {
  auto text = aidir.ReadSmallFile(kChownedMarker, 1024);
  if (!text || !*text) return false;
  auto r = DecodeRecord(**text);
  return r && Lookup(*r, "uid") == std::to_string(user.uid) && Lookup(*r, "gid") == std::to_string(user.gid);
}

// Everything both layouts share, in order: the image, the volume and its
// lock, an interrupted change, the history.
struct Common {
  std::optional<Credentials> user;
  Dir home;
  std::string vh_name;
  Dir data;  // HOME/data, or the seeded copy
  Dir vh;
  LayoutDecision decision;
  Dir state;
  Dir aidir;
  VolumeLock lock;
  std::optional<History> history;
  bool seeded = false;
};

// The data directory the agent will see: the image's, or the --seed-data
// copy made from it.
Result<Dir> SeededData(const Config& config, const Dir& image_data, const std::string& vh_name,
                       bool& seeded) {
  auto seed = Dir::OpenTrusted(config.seed_data, Kind::kCannotPlace);
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

Result<Common> OpenCommon(const Config& config, const std::vector<std::string>& command) {
  Common c;
  if (!config.user.empty()) {
    // An unknown user fails before anything is touched.
    auto resolved = ResolveUserFromFiles(config.user);
    if (!resolved) return std::unexpected(resolved.error());
    c.user = std::move(*resolved);
  }
  auto home = OpenHome(config.home);
  if (!home) return std::unexpected(home.error());
  c.home = std::move(*home);
  auto image_data = OpenImageData(c.home);
  if (!image_data) return std::unexpected(Wrap(image_data.error(), "find versioned home"));
  Discovery found = Discover(c.home, *image_data, config.versioned_home, Listing::kWhenNeeded);
  for (const auto& w : found.warnings) log::Warn(w);
  if (found.error) return std::unexpected(Wrap(*found.error, "find versioned home"));
  c.vh_name = *found.versioned_home;
  if (config.seed_data.empty()) {
    c.data = std::move(*image_data);
  } else {
    auto seeded = SeededData(config, *image_data, c.vh_name, c.seeded);
    if (!seeded) return std::unexpected(seeded.error());
    c.data = std::move(*seeded);
  }
  auto vh = c.data.OpenSub(c.vh_name);
  if (!vh) return std::unexpected(Wrap(vh.error(), "open versioned home"));
  c.vh = std::move(*vh);
  log::Debug("found the versioned home",
             {{"path", c.vh.path()}, {"evidence", std::string(RuleName(found.rule))}});
  c.decision = DecideLayout(config.layout, command, c.vh);
  log::Debug("layout", {{"layout", std::string(LayoutName(c.decision.layout))},
                        {"evidence", c.decision.evidence},
                        {"generation", std::string(GenerationName(c.decision.generation))}});

  auto state = OpenState(config);
  if (!state) return std::unexpected(state.error());
  c.state = std::move(*state);
  auto aidir = c.state.MakeSub(".agent-init", 0700);
  if (!aidir) return std::unexpected(Wrap(aidir.error(), "prepare bookkeeping directory"));
  c.aidir = std::move(*aidir);
  auto lock = VolumeLock::Acquire(c.aidir, config.lock_timeout, config.mode);
  if (!lock) return std::unexpected(lock.error());
  c.lock = std::move(*lock);
  Journal journal(c.aidir);
  auto recovered = RecoverJournal(journal, &c.vh, c.state, c.aidir);
  if (!recovered) return std::unexpected(recovered.error());
  auto history = ReadHistory(c.aidir);
  if (!history) return std::unexpected(history.error());
  c.history = std::move(*history);
  return c;
}

// A fresh copy of the data directory belongs to the agent's user, as the
// agent (8.16+) would make its own home when it may chown.
Result<void> HandOverSeed(const Config& config, const Common& c) {
  if (config.seed_data.empty() || !c.seeded) return {};
  auto changed = ChownTree(c.data, c.user->uid, c.user->gid);
  if (!changed) return std::unexpected(Wrap(changed.error(), "hand the data directory copy to --user"));
  return {};
}

Result<void> RecordVersion(const Common& c) {
  if (c.history && c.history->current == c.vh_name) return {};
  return WriteHistory(c.aidir, WithChange(c.history.value_or(History{}), c.vh_name, UtcNow()));
}

// Run layout: STATE/run in place of VH/run.
Result<Prepared> PrepareRunLayout(const Config& config, Common& c) {
  auto state_run = c.state.MakeSub("run", 0770);
  if (!state_run) return std::unexpected(Wrap(state_run.error(), "prepare run directory"));
  Journal journal(c.aidir);
  auto snapshotted = HandleVersionChange(config, c.history, c.vh_name, c.state, "", c.aidir, journal);
  if (!snapshotted) return std::unexpected(snapshotted.error());
  auto checked = CheckExecutablePlaces(c.data, c.vh, c.state, false);
  if (!checked) return std::unexpected(checked.error());
  // A bind mount made in an init container would vanish with it: the seeded
  // copy gets the symlink, which the main container sees.
  Method method = config.seed_data.empty() ? config.method : Method::kSymlink;
  auto placed = PlaceRun(method, c.vh, *state_run, StateRunPath(config), c.aidir, journal, UtcStamp());
  if (!placed) return std::unexpected(Wrap(placed.error(), "put run directory in place"));
  auto recorded = RecordVersion(c);
  if (!recorded) return std::unexpected(recorded.error());
  if (c.user) {
    auto handed = HandOver({&*state_run}, {&*state_run}, c.aidir, *c.user,
                           *snapshotted || placed->migration.has_value());
    if (!handed) return std::unexpected(handed.error());
    auto copy = HandOverSeed(config, c);
    if (!copy) return std::unexpected(copy.error());
  }
  Prepared out;
  out.versioned_home = c.vh.path();
  out.layout = Layout::kRun;
  out.placement = placed->placement;
  out.changed = placed->changed || c.seeded;
  log::Info(out.changed ? "run directory in place" : "run directory already in place",
            {{"versioned_home", out.versioned_home},
             {"method", std::string(PlacementName(out.placement))},
             {"state", state_run->path()}});
  return out;
}

// State layout: the volume is STATE_PATH; 7.x install and temp directories
// point back into the image.
Result<Prepared> PrepareStateLayout(const Config& config, Common& c) {
  auto env = CheckStatePathEnvironment(config.state);
  if (!env) return std::unexpected(env.error());
  auto data = c.state.MakeSub("data", 0770);
  if (!data) return std::unexpected(Wrap(data.error(), "prepare STATE_PATH data directory"));
  auto run = data->MakeSub("run", 0770);
  if (!run) return std::unexpected(Wrap(run.error(), "prepare run directory"));
  auto marker = RefuseInstalledMarker(*data);
  if (!marker) return std::unexpected(marker.error());
  Journal journal(c.aidir);
  auto snapshotted = HandleVersionChange(config, c.history, c.vh_name, c.state, "data", c.aidir, journal);
  if (!snapshotted) return std::unexpected(snapshotted.error());
  bool v1 = c.decision.generation == Generation::kV1;
  auto checked = CheckExecutablePlaces(c.data, c.vh, c.state, v1);
  if (!checked) return std::unexpected(checked.error());
  bool changed = c.seeded;
  if (v1) {
    // As the agent sees them: HOME/data (the seeded copy is mounted there).
    std::string image_data = NormalizePath(config.home + "/data");
    // The link targets; made for the agent's user when agent-init makes them.
    for (auto [dir, name] : {std::pair{&c.data, "tmp"}, std::pair{&c.vh, "install"}}) {
      if (::mkdirat(dir->fd(), name, 0770) == 0) {
        if (c.user) ::fchownat(dir->fd(), name, c.user->uid, c.user->gid, AT_SYMLINK_NOFOLLOW);
      } else if (errno != EEXIST) {
        return SysFail(errno, "create " + Q(dir->PathOf(name)));
      }
    }
    auto linked = LinkExecDirs(
        *data, {{"install", image_data + "/" + c.vh_name + "/install"}, {"tmp", image_data + "/tmp"}},
        c.aidir, UtcStamp());
    if (!linked) return std::unexpected(Wrap(linked.error(), "point install and tmp at the image"));
    changed = changed || *linked;
  }
  auto recorded = RecordVersion(c);
  if (!recorded) return std::unexpected(recorded.error());
  if (c.user) {
    auto handed = HandOver({&*data}, {&c.state, &*data, &*run}, c.aidir, *c.user, *snapshotted);
    if (!handed) return std::unexpected(handed.error());
    auto copy = HandOverSeed(config, c);
    if (!copy) return std::unexpected(copy.error());
  }
  Prepared out;
  out.versioned_home = c.vh.path();
  out.layout = Layout::kState;
  out.placement = v1 ? Placement::kSymlink : Placement::kNone;
  out.changed = changed;
  out.environment.emplace_back("STATE_PATH", NormalizePath(config.state));
  log::Info("state volume ready as STATE_PATH",
            {{"versioned_home", out.versioned_home},
             {"state_path", NormalizePath(config.state)},
             {"generation", std::string(GenerationName(c.decision.generation))},
             {"install_and_tmp", v1 ? "linked to the image" : "not used (8.6+)"}});
  return out;
}

}  // namespace

std::string StateRunPath(const Config& config) { return NormalizePath(config.state + "/run"); }

Result<Dir> OpenState(const Config& config) {
  auto state = Dir::OpenTrusted(config.state, Kind::kCannotPlace);
  if (!state) {
    Error e = state.error();
    if (e.err == ENOENT) {
      e.hint = "mount the persistent volume at " + Q(config.state) +
               " (or set --state / AGENT_INIT_STATE to where it is mounted)";
    }
    return std::unexpected(Wrap(e, "open state volume"));
  }
  return state;
}

Result<void> RecoverJournal(Journal& journal, const Dir* vh, const Dir& state, const Dir& aidir) {
  auto intent = journal.Read();
  if (!intent) return std::unexpected(intent.error());
  if (!*intent) return {};
  const Intent& in = **intent;
  if (in.op == "migrate") {
    if (vh == nullptr) {
      return Fail(Kind::kCannotPlace, "an interrupted migration waits in " + Q(aidir.PathOf(Journal::kFile)),
                  "start the agent (or agent-init prepare) once so that it finishes, then try again");
    }
    auto state_run = state.MakeSub("run", 0770);
    if (!state_run) return std::unexpected(state_run.error());
    auto image_run = vh->OpenSub("run");
    auto r = ResumeMigration(in, image_run ? &*image_run : nullptr, *state_run, aidir, journal);
    if (!r) return std::unexpected(r.error());
    return {};
  }
  if (in.op == "snapshot" || in.op == "restore") return ResumeSnapshotChange(in, state, aidir, journal);
  return Fail(Kind::kLayout,
              "journal " + Q(aidir.PathOf(Journal::kFile)) + " records an unknown change " + Q(in.op),
              "it was written by another agent-init version; run that version once, or remove the file");
}

Result<void> HandOver(const std::vector<const Dir*>& trees, const std::vector<const Dir*>& tops,
                      const Dir& aidir, const Credentials& user, bool force_walk) {
  if (force_walk || !ChownedMarkerMatches(aidir, user)) {
    std::vector<const Dir*> walk = trees;
    walk.push_back(&aidir);
    for (const Dir* dir : walk) {
      auto changed = ChownTree(*dir, user.uid, user.gid);
      if (!changed) return std::unexpected(Wrap(changed.error(), "hand the state to --user"));
      if (*changed > 0) {
        log::Info("changed owner", {{"path", dir->path()},
                                    {"entries", std::to_string(*changed)},
                                    {"owner", std::to_string(user.uid) + ":" + std::to_string(user.gid)}});
      }
    }
    auto marked = WriteChownedMarker(aidir, user);
    if (!marked) return marked;
  }
  // The directories the agent writes into, checked at every start: one
  // recreated since the last walk (an operator's rm -rf) is root's otherwise.
  for (const Dir* dir : tops) {
    struct stat st;
    if (::fstat(dir->fd(), &st) < 0) return SysFail(errno, "stat " + Q(dir->path()));
    if ((st.st_uid != user.uid || st.st_gid != user.gid) && ::fchown(dir->fd(), user.uid, user.gid) < 0) {
      return SysFail(errno, "chown " + Q(dir->path()));
    }
  }
  // Files agent-init (re)wrote as root on this start.
  for (const char* name : {"lock", "owner", "history", kChownedMarker}) {
    if (::fchownat(aidir.fd(), name, user.uid, user.gid, AT_SYMLINK_NOFOLLOW) < 0 && errno != ENOENT) {
      return SysFail(errno, "chown " + Q(aidir.PathOf(name)));
    }
  }
  return {};
}

Result<Prepared> Prepare(const Config& config, const std::vector<std::string>& command) {
  auto common = OpenCommon(config, command);
  if (!common) return std::unexpected(common.error());
  auto prepared = common->decision.layout == Layout::kState ? PrepareStateLayout(config, *common)
                                                            : PrepareRunLayout(config, *common);
  if (!prepared) return prepared;
  prepared->lock = std::move(common->lock);
  prepared->user = std::move(common->user);
  return prepared;
}

}  // namespace agent_init
