#include "prepare.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "atomic_file.h"
#include "clock.h"
#include "exec_places.h"
#include "history.h"
#include "journal.h"
#include "layout.h"
#include "log.h"
#include "migrate.h"
#include "mount_table.h"
#include "ownership.h"
#include "record.h"
#include "snapshot.h"

namespace agent_init {
namespace {

constexpr const char* kChownedMarker = "chowned";

Result<void> CheckExecutablePlaces(const Dir& home, const Dir& vh, const Dir& state) {
  auto table = MountTable::Read();
  if (!table) return std::unexpected(table.error());
  PlacesReport report = CheckPlaces(home, vh, state, *table);
  for (const auto& w : report.warnings) log::Warn(w);
  if (report.problems.empty()) return {};
  for (size_t i = 1; i < report.problems.size(); ++i) log::Error(report.problems[i].message);
  return Fail(Kind::kLayout, report.problems.front().message);
}

// A different versioned home than last time: keep the state as it was under
// the previous one before the new version touches it.
Result<bool> HandleVersionChange(const Config& config, const std::optional<History>& history,
                                 const std::string& vh_name, const Dir& state, const Dir& aidir,
                                 Journal& journal) {
  if (!history || history->current == vh_name || history->current.empty()) return false;
  const std::string& previous = history->current;
  log::Info("a different versioned home starts on this volume", {{"previous", previous}, {"now", vh_name}});
  bool snapshotted = false;
  if (config.keep_snapshots > 0) {
    auto taken = TakeSnapshot(state, aidir, journal, previous, config.keep_snapshots);
    if (!taken) return std::unexpected(taken.error());
    log::Info("snapshot of the previous version's state taken",
              {{"snapshot", aidir.PathOf("snapshots/" + previous)}});
    snapshotted = true;
  }
  bool returning = false;
  for (const auto& change : history->changes) returning = returning || change.from == vh_name;
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

Result<void> HandOver(const Dir& state_run, const Dir& aidir, const Credentials& user, bool force_walk) {
  if (force_walk || !ChownedMarkerMatches(aidir, user)) {
    for (const Dir* dir : {&state_run, &aidir}) {
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
  // Files agent-init (re)wrote as root on this start.
  for (const char* name : {"lock", "owner", "history", kChownedMarker}) {
    if (::fchownat(aidir.fd(), name, user.uid, user.gid, AT_SYMLINK_NOFOLLOW) < 0 && errno != ENOENT) {
      return SysFail(errno, "chown " + Q(aidir.PathOf(name)));
    }
  }
  return {};
}

Result<Prepared> Prepare(const Config& config) {
  std::optional<Credentials> user;
  if (!config.user.empty()) {
    // An unknown user fails before anything is touched.
    auto resolved = ResolveUserFromFiles(config.user);
    if (!resolved) return std::unexpected(resolved.error());
    user = std::move(*resolved);
  }

  auto home = OpenHome(config.home);
  if (!home) return std::unexpected(home.error());
  Discovery found = Discover(*home, config.versioned_home);
  for (const auto& w : found.warnings) log::Warn(w);
  if (found.error) return std::unexpected(Wrap(*found.error, "find versioned home"));
  const std::string& vh_name = *found.versioned_home;
  auto vh = OpenVersionedHome(*home, vh_name);
  if (!vh) return std::unexpected(Wrap(vh.error(), "open versioned home"));
  log::Debug("found the versioned home",
             {{"path", vh->path()}, {"evidence", std::string(RuleName(found.rule))}});

  auto state = OpenState(config);
  if (!state) return std::unexpected(state.error());
  auto aidir = state->MakeSub(".agent-init", 0700);
  if (!aidir) return std::unexpected(Wrap(aidir.error(), "prepare bookkeeping directory"));
  auto lock = VolumeLock::Acquire(*aidir, config.lock_timeout, config.mode);
  if (!lock) return std::unexpected(lock.error());

  Journal journal(*aidir);
  auto recovered = RecoverJournal(journal, &*vh, *state, *aidir);
  if (!recovered) return std::unexpected(recovered.error());
  auto state_run = state->MakeSub("run", 0770);
  if (!state_run) return std::unexpected(Wrap(state_run.error(), "prepare run directory"));

  auto history = ReadHistory(*aidir);
  if (!history) return std::unexpected(history.error());
  auto snapshotted = HandleVersionChange(config, *history, vh_name, *state, *aidir, journal);
  if (!snapshotted) return std::unexpected(snapshotted.error());

  auto checked = CheckExecutablePlaces(*home, *vh, *state);
  if (!checked) return std::unexpected(checked.error());

  auto placed = PlaceRun(config.method, *vh, *state_run, StateRunPath(config), *aidir, journal, UtcStamp());
  if (!placed) return std::unexpected(Wrap(placed.error(), "put run directory in place"));

  if (!*history || (*history)->current != vh_name) {
    auto written = WriteHistory(*aidir, WithChange(history->value_or(History{}), vh_name, UtcNow()));
    if (!written) return std::unexpected(written.error());
  }
  if (user) {
    auto handed = HandOver(*state_run, *aidir, *user, *snapshotted || placed->migration.has_value());
    if (!handed) return std::unexpected(handed.error());
  }

  Prepared out{vh->path(), placed->placement, placed->changed, std::move(*lock), std::move(user)};
  log::Info(placed->changed ? "run directory in place" : "run directory already in place",
            {{"versioned_home", out.versioned_home},
             {"method", std::string(PlacementName(out.placement))},
             {"state", state_run->path()}});
  return out;
}

}  // namespace agent_init
