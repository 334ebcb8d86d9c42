#include "commands/inspect.h"

#include "volume/journal.h"
#include "base/json.h"
#include "base/mount_table.h"
#include "volume/placement.h"
#include "commands/prepare.h"
#include "volume/state_path.h"

namespace agent_init {
namespace {

void AddProblem(InspectReport& r, std::string code, std::string path, const Error& e) {
  std::string msg = e.msg;
  if (!e.hint.empty()) msg += " (" + e.hint + ")";
  r.problems.push_back(Problem{std::move(code), std::move(path), std::move(msg)});
}

// What PlaceRun would do, predicted from the capability set; seccomp or an
// LSM may still refuse the mount, and auto then falls back to the symlink.
void PredictMethod(const Config& config, InspectReport& r) {
  switch (config.method) {
    case Method::kBind:
      r.method = "bind";
      r.method_reason = "--method bind";
      return;
    case Method::kSymlink:
      r.method = "symlink";
      r.method_reason = "--method symlink";
      return;
    case Method::kAuto:
      if (HaveMountCapability()) {
        r.method = "bind";
        r.method_reason = "auto: CAP_SYS_ADMIN is effective (falls back to symlink if the mount is refused)";
      } else {
        r.method = "symlink";
        r.method_reason = "auto: no CAP_SYS_ADMIN, so mounting is not permitted";
      }
  }
}

// The lock, the history, the snapshots and any unfinished change.
void InspectBookkeeping(const Dir& aidir, InspectReport& r) {
  auto lock = ProbeLock(aidir);
  if (lock) {
    r.lock = *lock;
  } else {
    AddProblem(r, "state-unsafe", aidir.PathOf("lock"), lock.error());
  }
  auto history = ReadHistory(aidir);
  if (history) {
    r.history = *history;
  } else {
    AddProblem(r, "state-unsafe", aidir.PathOf("history"), history.error());
  }
  auto snapshots = ListSnapshots(aidir);
  if (snapshots) {
    r.snapshots = *snapshots;
  } else {
    AddProblem(r, "state-unsafe", aidir.PathOf("snapshots"), snapshots.error());
  }
  Journal journal(aidir);
  auto intent = journal.Read();
  if (!intent) {
    AddProblem(r, "journal", aidir.PathOf(Journal::kFile), intent.error());
  } else if (*intent) {
    r.pending_change = (*intent)->op + " " + (*intent)->id + " (phase " + (*intent)->phase + ")";
    r.warnings.push_back("an interrupted change waits in " + Q(aidir.PathOf(Journal::kFile)) + ": " +
                         *r.pending_change + "; the next prepare finishes it");
  }
}

// The state layout: STATE_PATH, the .installed marker, and (7.x) whether
// STATE/data/install and tmp already point at the image.
void InspectStateLayout(const Config& config, const Dir* state, InspectReport& r) {
  r.state_run = NormalizePath(config.state + "/data/run");
  r.method = r.layout.generation == Generation::kV1 ? "symlink" : "none";
  r.method_reason = r.layout.generation == Generation::kV1
                        ? "state layout, 7.x: STATE/data/install and tmp become symlinks into the image"
                        : "state layout: the volume is STATE_PATH; nothing to put in place";
  if (auto env = CheckStatePathEnvironment(config.state); !env)
    AddProblem(r, "state-path", config.state, env.error());
  if (state == nullptr) return;
  auto data = state->OpenSub("data");
  if (!data) return;
  if (auto marker = RefuseInstalledMarker(*data); !marker)
    AddProblem(r, "installed-marker", data->PathOf(".installed"), marker.error());
  if (r.layout.generation == Generation::kV1) {
    std::string image_data = NormalizePath(config.home + "/data");
    r.prepared = data->ReadLink("tmp") == image_data + "/tmp" &&
                 data->ReadLink("install") == (r.versioned_home ? *r.versioned_home + "/install" : "");
  } else {
    r.prepared = static_cast<bool>(data->OpenSub("run"));
  }
}

void WriteOwner(JsonWriter& j, const std::optional<Owner>& o) {
  if (!o) {
    j.Null();
    return;
  }
  j.BeginObject().Field("pid", o->pid).Field("host", o->host).Field("started", o->started);
  j.Field("version", o->version).Field("mode", o->mode).EndObject();
}

void WritePlace(JsonWriter& j, const Place& p) {
  j.BeginObject();
  j.Field("role", p.role).Field("path", p.path);
  if (p.found_mount) {
    j.Field("target", p.mount.target).Field("fstype", p.mount.fstype);
    j.Field("options", p.mount.vfs_options).Key("noexec").Bool(p.mount.noexec);
  } else {
    j.Key("target").Null().Key("fstype").Null().Key("options").Null().Key("noexec").Null();
  }
  j.Key("mount_id").Uint(p.mount_id);
  j.EndObject();
}

}  // namespace

InspectReport Inspect(const Config& config, const std::vector<std::string>& command) {
  InspectReport r;
  r.home = config.home;
  r.data = NormalizePath(config.home + "/data");
  r.state = config.state;
  r.state_run = StateRunPath(config);
  PredictMethod(config, r);

  auto home = OpenHome(config.home);
  std::optional<Dir> data;
  std::optional<Dir> vh;
  if (!home) {
    AddProblem(r, "layout", config.home, home.error());
  } else {
    auto image_data = OpenImageData(*home);
    if (image_data) {
      r.discovery = Discover(*home, *image_data, config.versioned_home);
      data = std::move(*image_data);
    } else {
      r.discovery.data_path = r.data;
      r.discovery.error = image_data.error();
    }
    for (const auto& w : r.discovery.warnings) r.warnings.push_back(w);
    if (r.discovery.error) {
      AddProblem(r, "layout", r.data, *r.discovery.error);
    } else {
      auto opened = data->OpenSub(*r.discovery.versioned_home);
      if (opened) {
        r.versioned_home = opened->path();
        vh = std::move(*opened);
      } else {
        AddProblem(r, "layout", r.data + "/" + *r.discovery.versioned_home, opened.error());
      }
    }
  }

  auto state = Dir::OpenTrusted(config.state, Kind::kCannotPlace);
  std::optional<Dir> state_run;
  if (!state) {
    AddProblem(r, "state-missing", config.state, state.error());
  } else {
    auto run = state->OpenSub("run");
    if (run) {
      state_run = std::move(*run);
    } else if (run.error().err != ENOENT) {
      AddProblem(r, "state-unsafe", r.state_run, run.error());
    }
    auto aidir = state->OpenSub(".agent-init");
    if (aidir) {
      InspectBookkeeping(*aidir, r);
    } else if (aidir.error().err != ENOENT) {
      AddProblem(r, "state-unsafe", state->PathOf(".agent-init"), aidir.error());
    }
  }

  if (vh) {
    r.layout = DecideLayout(config.layout, command, *vh, kDefaultEntrypoint, GenerationLookup::kAlways);
  }
  if (vh && r.layout.layout == Layout::kState) {
    InspectStateLayout(config, state ? &*state : nullptr, r);
  } else if (vh) {
    auto status = ExamineRun(*vh, state_run ? &*state_run : nullptr, r.state_run);
    if (!status) {
      AddProblem(r, "layout", vh->PathOf("run"), status.error());
    } else {
      r.prepared = status->placed();
      if (r.prepared) {
        r.method = std::string(PlacementName(status->placement()));
        r.method_reason = "already in place";
      }
      if (status->kind == RunStatus::Kind::kImageDir && status->has_entries) {
        r.warnings.push_back(Q(vh->PathOf("run")) +
                             " holds state from before agent-init; prepare moves it into " + Q(r.state_run));
      }
    }
  }

  if (home && vh && state) {
    auto table = MountTable::Read();
    if (!table) {
      AddProblem(r, "mounts", "/proc/self/mountinfo", table.error());
    } else {
      auto source = [&]() -> const MountTable* { return &*table; };
      PlacesReport places = CheckPlaces(*data, *vh, *state, source);  // vh was opened from data
      for (auto& p : places.places) AttachMount(p, *table);
      r.places = std::move(places.places);
      for (auto& p : places.problems) r.problems.push_back(std::move(p));
      for (auto& w : places.warnings) r.warnings.push_back(std::move(w));
      if (places.exdev) {
        // As prepare decides: a problem where the state layout links a 7.x
        // agent's install and temp directories, a warning elsewhere.
        bool links = r.layout.layout == Layout::kState && r.layout.generation == Generation::kV1;
        if (links) {
          r.problems.push_back(*places.exdev);
        } else {
          r.warnings.push_back(places.exdev->message);
        }
      }
    }
  }
  return r;
}

std::string RenderJson(const InspectReport& r) {
  JsonWriter j;
  j.BeginObject();
  j.Field("home", r.home).Field("data", r.data);
  j.Key("versioned_home");
  if (r.versioned_home)
    j.String(*r.versioned_home);
  else
    j.Null();
  j.Key("versioned_home_evidence");
  if (r.versioned_home)
    j.String(RuleName(r.discovery.rule));
  else
    j.Null();
  j.Key("evidence").BeginArray();
  for (const auto& ev : r.discovery.evidence) {
    j.BeginObject().Field("rule", RuleName(ev.rule)).Field("source", ev.source).Field("says", ev.says);
    j.Key("names");
    if (ev.names)
      j.String(*ev.names);
    else
      j.Null();
    j.Key("exists").Bool(ev.exists).EndObject();
  }
  j.EndArray();
  j.Key("candidates").BeginArray();
  for (const auto& c : r.discovery.candidates) j.String(c.name);
  j.EndArray();
  j.Field("state", r.state).Field("state_run", r.state_run);
  j.Field("layout", LayoutName(r.layout.layout)).Field("layout_evidence", r.layout.evidence);
  j.Field("generation", GenerationName(r.layout.generation))
      .Field("generation_evidence", r.layout.generation_evidence);
  j.Field("method", r.method).Field("method_reason", r.method_reason);
  j.Key("prepared").Bool(r.prepared);
  j.Key("mounts").BeginArray();
  for (const auto& p : r.places) WritePlace(j, p);
  j.EndArray();
  j.Key("lock").BeginObject().Key("held").Bool(r.lock.held).Key("last_owner");
  WriteOwner(j, r.lock.last_owner);
  j.EndObject();
  j.Key("last_versioned_home");
  if (r.history)
    j.String(r.history->current);
  else
    j.Null();
  j.Key("history").BeginArray();
  if (r.history) {
    for (const auto& c : r.history->changes)
      j.BeginObject().Field("at", c.at).Field("from", c.from).Field("to", c.to).EndObject();
  }
  j.EndArray();
  j.Key("snapshots").BeginArray();
  for (const auto& s : r.snapshots)
    j.BeginObject().Field("name", s.name).Key("taken").Int(s.taken).EndObject();
  j.EndArray();
  j.Key("pending_change");
  if (r.pending_change)
    j.String(*r.pending_change);
  else
    j.Null();
  j.Key("problems").BeginArray();
  for (const auto& p : r.problems)
    j.BeginObject().Field("code", p.code).Field("path", p.path).Field("message", p.message).EndObject();
  j.EndArray();
  j.Key("warnings").BeginArray();
  for (const auto& w : r.warnings) j.String(w);
  j.EndArray();
  j.EndObject();
  return j.str() + "\n";
}

std::string RenderText(const InspectReport& r) {
  std::string out;
  auto line = [&](std::string_view key, std::string_view value) {
    out += key;
    out.append(key.size() < 18 ? 18 - key.size() : 1, ' ');
    out += value;
    out += '\n';
  };
  line("home:", r.home);
  line("versioned home:", r.versioned_home
                              ? *r.versioned_home + " (by " + std::string(RuleName(r.discovery.rule)) + ")"
                              : std::string("not found"));
  std::string cands;
  for (const auto& c : r.discovery.candidates) cands += (cands.empty() ? "" : ", ") + c.name;
  line("candidates:", cands.empty() ? "none" : cands);
  for (const auto& ev : r.discovery.evidence) {
    line("  evidence:", std::string(RuleName(ev.rule)) + ": " + ev.source + " -> " + ev.names.value_or("?") +
                            (ev.exists ? "" : " (missing)"));
  }
  line("state:", r.state);
  line("state run:", r.state_run);
  line("layout:", std::string(LayoutName(r.layout.layout)) + " (" + r.layout.evidence + ")");
  line("generation:",
       std::string(GenerationName(r.layout.generation)) + " (" + r.layout.generation_evidence + ")");
  line("method:", r.method + " (" + r.method_reason + ")");
  line("prepared:", r.prepared ? "yes" : "no");
  for (const auto& p : r.places) {
    std::string where = p.found_mount ? p.mount.target + " " + p.mount.fstype + " " + p.mount.vfs_options +
                                            (p.mount.noexec ? " [noexec]" : "")
                                      : std::string("mount not found");
    line("mount " + p.role + ":", p.path + " on " + where + " (id " + std::to_string(p.mount_id) + ")");
  }
  line("lock:", std::string(r.lock.held ? "held" : "free") +
                    (r.lock.last_owner ? "; last owner " + DescribeOwner(*r.lock.last_owner) : ""));
  line("last used by:", r.history ? r.history->current : std::string("nothing yet"));
  std::string snaps;
  for (const auto& s : r.snapshots) snaps += (snaps.empty() ? "" : ", ") + s.name;
  line("snapshots:", snaps.empty() ? "none" : snaps);
  for (const auto& w : r.warnings) line("warning:", w);
  for (const auto& p : r.problems) line("problem:", "[" + p.code + "] " + p.message);
  if (r.problems.empty()) out += "no problems\n";
  return out;
}

}  // namespace agent_init
