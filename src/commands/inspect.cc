#include "commands/inspect.h"

#include "base/mount_table.h"
#include "base/sys.h"
#include "image/image.h"
#include "volume/identity.h"
#include "volume/layout_transition.h"
#include "volume/names.h"
#include "volume/placement.h"
#include "volume/state_path.h"
#include "volume/volume.h"

namespace agent_init {
namespace {

void AddProblem(InspectReport& r, std::string code, std::string path, const Error& e) {
  std::string msg = e.msg;
  if (!e.hint.empty()) msg += " (" + e.hint + ")";
  r.problems.push_back(Problem{std::move(code), std::move(path), std::move(msg)});
}

// What PlaceRun would do, predicted from the capability set; seccomp or an
// LSM may still refuse the mount, and auto then falls back to the symlink.
void PredictMethod(Method method, Privileged& ops, InspectReport& r) {
  switch (method) {
    case Method::kBind:
      r.method = "bind";
      r.method_reason = "--method bind";
      return;
    case Method::kSymlink:
      r.method = "symlink";
      r.method_reason = "--method symlink";
      return;
    case Method::kAuto:
      if (ops.HasMountCapability()) {
        r.method = "bind";
        r.method_reason = "auto: CAP_SYS_ADMIN is effective (falls back to symlink if the mount is refused)";
      } else {
        r.method = "symlink";
        r.method_reason = "auto: no CAP_SYS_ADMIN, so mounting is not permitted";
      }
  }
}

// The lock, the history, the snapshots and any unfinished change.
void InspectBookkeeping(Volume& volume, InspectReport& r) {
  const Dir& aidir = volume.bookkeeping();
  auto lock = ProbeLock(aidir);
  if (lock) {
    r.lock = *lock;
  } else {
    AddProblem(r, "state-unsafe", aidir.PathOf(names::kLock), lock.error());
  }
  auto history = ReadHistory(aidir);
  if (history) {
    r.history = *history;
  } else {
    AddProblem(r, "state-unsafe", aidir.PathOf(names::kHistory), history.error());
  }
  auto snapshots = ListSnapshots(volume);
  if (snapshots) {
    r.snapshots = *snapshots;
  } else {
    AddProblem(r, "state-unsafe", aidir.PathOf(names::kSnapshots), snapshots.error());
  }
  Journal& journal = volume.journal();
  auto intent = journal.Read();
  if (!intent) {
    AddProblem(r, "journal", journal.Path(), intent.error());
  } else if (*intent) {
    r.pending_change = (*intent)->op + " " + (*intent)->id + " (phase " + (*intent)->phase + ")";
    r.warnings.push_back("an interrupted change waits in " + Q(journal.Path()) + ": " + *r.pending_change +
                         "; the next prepare finishes it");
  }
}

// The volume: its run directory (run layout) and its bookkeeping.
std::optional<Volume> InspectVolume(const std::string& state, std::optional<Dir>& state_run,
                                    InspectReport& r) {
  auto volume = Volume::Open(state);
  if (!volume) {
    AddProblem(r, "state-missing", state, volume.error());
    return std::nullopt;
  }
  r.state_filesystem = sys::FilesystemName(volume->dir().fd());
  r.state_reflink = std::string(ReflinkOf(r.state_filesystem));
  auto run = volume->dir().OpenSub(Volume::RunRel(Layout::kRun));
  if (run) {
    state_run = std::move(*run);
  } else if (run.error().err != ENOENT) {
    AddProblem(r, "state-unsafe", r.state_run, run.error());
  }
  auto opened = volume->OpenBookkeeping();
  if (!opened) {
    AddProblem(r, "state-unsafe", volume->BookkeepingPath(""), opened.error());
  } else if (*opened) {
    InspectBookkeeping(*volume, r);
  }
  return std::move(*volume);
}

// The state layout: STATE_PATH, the .installed marker, and (7.x) whether
// STATE/data/install and tmp already point at the image.
void InspectStateLayout(const std::string& state, const std::string& home, const std::string& vh_name,
                        const Volume* volume, InspectReport& r) {
  const bool links = LinksExecDirs(r.layout);
  r.state_run = Volume::RunPathOf(state, Layout::kState);
  r.method = links ? "symlink" : "none";
  r.method_reason = links ? "state layout, 7.x: STATE/data/install and tmp become symlinks into the image"
                          : "state layout: the volume is STATE_PATH; nothing to put in place";
  if (auto env = CheckStatePathEnvironment(state); !env) AddProblem(r, "state-path", state, env.error());
  if (volume == nullptr) return;
  auto data = volume->OpenData();
  if (!data) return;
  if (auto marker = RefuseInstalledMarker(*data); !marker)
    AddProblem(r, "installed-marker", data->PathOf(names::kInstalledMarker), marker.error());
  r.prepared = links ? ExecLinksInPlace(*data, ExecLinks(home, vh_name))
                     : static_cast<bool>(data->OpenSub(names::kRun));
}

// The run layout: what VH/run is now.
void InspectRunLayout(const Dir& vh, const Dir* state_run, InspectReport& r) {
  auto status = ExamineRun(vh, state_run, r.state_run);
  if (!status) {
    AddProblem(r, "layout", vh.PathOf(names::kRun), status.error());
    return;
  }
  r.prepared = status->placed();
  if (r.prepared) {
    r.method = std::string(PlacementName(status->placement()));
    r.method_reason = "already in place";
  }
  if (status->kind == RunStatus::Kind::kImageDir && status->has_entries) {
    r.warnings.push_back(Q(vh.PathOf(names::kRun)) +
                         " holds state from before agent-init; prepare moves it into " + Q(r.state_run));
  }
}

// The layout that last used the volume, and what a start in this one would
// carry over (a conflict is a problem: prepare stops there).
void InspectLayoutChange(const Volume& volume, InspectReport& r) {
  auto plan = PlanLayoutTransition(volume, r.layout.layout);
  if (!plan) {
    AddProblem(r, "state-unsafe", volume.BookkeepingPath(names::kLayoutRecord), plan.error());
    return;
  }
  if (plan->last) r.last_layout = std::string(LayoutName(*plan->last));
  const std::string from = volume.dir().PathOf(Volume::RunRel(plan->from));
  const std::string to = volume.dir().PathOf(Volume::RunRel(plan->to));
  switch (plan->what) {
    case LayoutTransition::What::kNone:
      return;
    case LayoutTransition::What::kMove:
      r.layout_change = "moves " + Q(from) + " (" + std::to_string(plan->entries) +
                        (plan->entries == 1 ? " entry" : " entries") + ") to " + Q(to) + ", after a snapshot";
      return;
    case LayoutTransition::What::kIdentical:
      r.layout_change = "removes " + Q(from) + ", which holds the same state as " + Q(to);
      return;
    case LayoutTransition::What::kConflict:
      r.layout_change = "stops (65): both " + Q(from) + " and " + Q(to) + " hold state, and it differs";
      AddProblem(r, "layout-conflict", from, LayoutConflict(volume, *plan));
      return;
  }
}

// The agent's own files: where it will look for each, and what a recreation
// loses. The run layout is predicted for exec mode, and says what
// --supervise would keep.
void InspectIdentity(const Volume& volume, const std::string& vh_name, InspectReport& r) {
  const auto [config_path, on_volume] = ResolveConfigPath(volume);
  IdentityOptions io{.layout = r.layout.layout,
                     .home = r.home,
                     .vh_name = vh_name,
                     .state = r.state,
                     .config_path = config_path,
                     .config_on_volume = on_volume,
                     .mounts = r.method == "bind",
                     .supervised = false};
  const IdentityPlan plan = PlanIdentity(io);
  io.supervised = true;
  const IdentityPlan supervised = PlanIdentity(io);
  if (!plan.config_path.empty()) r.config_path_for_agent = plan.config_path;
  for (size_t i = 0; i < plan.places.size(); ++i) {
    const IdentityPlace& p = plan.places[i];
    IdentityEntry e;
    e.file = std::string(p.file->name);
    e.role = std::string(FileRoleName(p.file->role));
    e.versions = std::string(p.file->versions);
    e.agent_path = p.agent_path;
    e.on_volume = p.keeping == Keeping::kOnVolume || p.keeping == Keeping::kConfigPath ||
                  p.keeping == Keeping::kHomeMount;
    e.kept = std::string(KeepingName(p.keeping));
    if (p.keeping == Keeping::kLost && supervised.places[i].keeping == Keeping::kSupervisor)
      e.kept = "lost in exec mode; kept with --supervise";
    if (!p.volume_rel.empty()) {
      e.volume_path = volume.dir().PathOf(p.volume_rel);
      auto st = volume.dir().Stat(p.volume_rel);
      e.present = st && *st;
    }
    e.loss = p.keeping == Keeping::kLost ? std::string(LossOf(p.file->role)) : "nothing";
    r.identity.push_back(std::move(e));
  }
}

// Where the agent executes from, with the mount of each place.
void InspectPlaces(const Image& image, const Volume& volume, InspectReport& r) {
  auto table = MountTable::Read();
  if (!table) {
    AddProblem(r, "mounts", MountTable::kSelf, table.error());
    return;
  }
  auto source = [&]() -> const MountTable* { return &*table; };
  PlacesReport places = CheckPlaces(image.data, image.vh, volume.dir(), source, LinksExecDirs(r.layout),
                                    PlaceFacts::kForReport);
  for (auto& p : places.places) AttachMount(p, *table);
  r.places = std::move(places.places);
  for (auto& p : places.problems) r.problems.push_back(std::move(p));
  for (auto& w : places.warnings) r.warnings.push_back(std::move(w));
}

}  // namespace

InspectReport Inspect(const Config& config, const std::vector<std::string>& command, Privileged& ops) {
  InspectReport r;
  r.home = config.home;
  r.data = ImageDataPath(config.home);
  r.state = config.state;
  r.state_run = Volume::RunPathOf(config.state, Layout::kRun);
  PredictMethod(config.method, ops, r);

  OpenedImage opened = OpenImage(config.home, config.versioned_home, Listing::kAll);
  const Image& image = opened.image;
  r.discovery = image.discovery;
  r.warnings = image.discovery.warnings;
  if (opened.failure) AddProblem(r, "layout", opened.failure->path, opened.failure->error);
  const bool have_vh = image.vh.valid();
  if (have_vh) r.versioned_home = image.vh.path();

  std::optional<Dir> state_run;
  std::optional<Volume> volume = InspectVolume(config.state, state_run, r);

  if (!have_vh) return r;
  r.layout = DecideLayout(config.layout, command, config.value_options, image.vh, GenerationLookup::kAlways);
  if (r.layout.layout == Layout::kState) {
    InspectStateLayout(config.state, config.home, *image.discovery.versioned_home,
                       volume ? &*volume : nullptr, r);
  } else {
    InspectRunLayout(image.vh, state_run ? &*state_run : nullptr, r);
  }
  if (volume) {
    InspectLayoutChange(*volume, r);
    InspectPlaces(image, *volume, r);
    InspectIdentity(*volume, *image.discovery.versioned_home, r);
  }
  return r;
}

}  // namespace agent_init
