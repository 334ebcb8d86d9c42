#include "prepare.h"

#include <ctime>

#include "exec_places.h"
#include "journal.h"
#include "layout.h"
#include "log.h"
#include "migrate.h"
#include "mount_table.h"

namespace agent_init {
namespace {

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

// A change that a crash interrupted is finished before anything else.
Result<void> Recover(Journal& journal, const Dir& vh, const Dir& state_run, const Dir& aidir) {
  auto intent = journal.Read();
  if (!intent) return std::unexpected(intent.error());
  if (!*intent) return {};
  if ((*intent)->op == "migrate") {
    auto image_run = vh.OpenSub("run");
    const Dir* image = image_run ? &*image_run : nullptr;
    auto r = ResumeMigration(**intent, image, state_run, aidir, journal);
    if (!r) return std::unexpected(r.error());
    return {};
  }
  return Fail(Kind::kLayout,
              "journal " + Q(aidir.PathOf(Journal::kFile)) + " records an unknown change " + Q((*intent)->op),
              "it was written by another agent-init version; run that version once, or remove the file");
}

Result<void> CheckExecutablePlaces(const Dir& home, const Dir& vh, const Dir& state) {
  auto table = MountTable::Read();
  if (!table) return std::unexpected(table.error());
  PlacesReport report = CheckPlaces(home, vh, state, *table);
  for (const auto& w : report.warnings) log::Warn(w);
  if (report.problems.empty()) return {};
  for (size_t i = 1; i < report.problems.size(); ++i) log::Error(report.problems[i].message);
  const Problem& first = report.problems.front();
  return Fail(Kind::kLayout, first.message);
}

}  // namespace

std::string StateRunPath(const Config& config) { return NormalizePath(config.state + "/run"); }

std::string NewChangeId() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

Result<Prepared> Prepare(const Config& config) {
  auto home = OpenHome(config.home);
  if (!home) return std::unexpected(home.error());

  Discovery found = Discover(*home, config.versioned_home);
  for (const auto& w : found.warnings) log::Warn(w);
  if (found.error) return std::unexpected(Wrap(*found.error, "find versioned home"));
  auto vh = OpenVersionedHome(*home, *found.versioned_home);
  if (!vh) return std::unexpected(Wrap(vh.error(), "open versioned home"));
  log::Debug("found the versioned home",
             {{"path", vh->path()}, {"evidence", std::string(RuleName(found.rule))}});

  auto state = OpenState(config);
  if (!state) return std::unexpected(state.error());
  auto aidir = state->MakeSub(".agent-init", 0700);
  if (!aidir) return std::unexpected(Wrap(aidir.error(), "prepare bookkeeping directory"));
  auto state_run = state->MakeSub("run", 0770);
  if (!state_run) return std::unexpected(Wrap(state_run.error(), "prepare run directory"));

  Journal journal(*aidir);
  auto recovered = Recover(journal, *vh, *state_run, *aidir);
  if (!recovered) return std::unexpected(recovered.error());

  auto checked = CheckExecutablePlaces(*home, *vh, *state);
  if (!checked) return std::unexpected(checked.error());

  auto placed =
      PlaceRun(config.method, *vh, *state_run, StateRunPath(config), *aidir, journal, NewChangeId());
  if (!placed) return std::unexpected(Wrap(placed.error(), "put run directory in place"));

  Prepared out{vh->path(), placed->placement, placed->changed};
  log::Info(placed->changed ? "run directory in place" : "run directory already in place",
            {{"versioned_home", out.versioned_home},
             {"method", std::string(PlacementName(out.placement))},
             {"state", state_run->path()}});
  return out;
}

}  // namespace agent_init
