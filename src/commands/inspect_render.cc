// The two renderings of an inspect report: one JSON object (--json) and
// aligned text for people. Both print what Inspect gathered, nothing more.
#include "commands/inspect.h"

#include "base/json.h"

namespace agent_init {
namespace {

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
  j.Key("nosuid").Bool(p.nosuid).Key("selinux_label");
  if (p.selinux.empty())
    j.Null();
  else
    j.String(p.selinux);
  j.EndObject();
}

// A string, or null.
void WriteOptional(JsonWriter& j, const std::optional<std::string>& value) {
  if (value)
    j.String(*value);
  else
    j.Null();
}

}  // namespace

std::string RenderJson(const InspectReport& r) {
  JsonWriter j;
  j.BeginObject();
  j.Field("home", r.home).Field("data", r.data);
  j.Key("versioned_home");
  WriteOptional(j, r.versioned_home);
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
  j.Field("state_filesystem", r.state_filesystem).Field("state_reflink", r.state_reflink);
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
  for (auto [key, value] : {std::pair{"pending_change", &r.pending_change}, std::pair{"last_layout", &r.last_layout},
                             std::pair{"layout_change", &r.layout_change}}) {
    j.Key(key);
    WriteOptional(j, *value);
  }
  j.Key("identity").BeginArray();
  for (const auto& e : r.identity) {
    j.BeginObject().Field("file", e.file).Field("role", e.role).Field("versions", e.versions);
    j.Field("agent_path", e.agent_path).Key("on_volume").Bool(e.on_volume).Field("kept", e.kept);
    j.Key("volume_path");
    WriteOptional(j, e.volume_path.empty() ? std::nullopt : std::optional<std::string>(e.volume_path));
    j.Key("present").Bool(e.present).Field("recreation_loses", e.loss).EndObject();
  }
  j.EndArray();
  j.Key("config_path_for_agent");
  WriteOptional(j, r.config_path_for_agent);
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
  if (!r.state_filesystem.empty())
    line("filesystem:", r.state_filesystem + " (reflink: " + r.state_reflink + ")");
  line("layout:", std::string(LayoutName(r.layout.layout)) + " (" + r.layout.evidence + ")");
  line("generation:",
       std::string(GenerationName(r.layout.generation)) + " (" + r.layout.generation_evidence + ")");
  line("method:", r.method + " (" + r.method_reason + ")");
  line("prepared:", r.prepared ? "yes" : "no");
  for (const auto& p : r.places) {
    std::string where = p.found_mount ? p.mount.target + " " + p.mount.fstype + " " + p.mount.vfs_options +
                                            (p.mount.noexec ? " [noexec]" : "")
                                      : std::string("mount not found");
    where += p.nosuid ? " [nosuid]" : "";
    where += p.selinux.empty() ? "" : " [selinux " + p.selinux + "]";
    line("mount " + p.role + ":", p.path + " on " + where + " (id " + std::to_string(p.mount_id) + ")");
  }
  line("lock:", std::string(r.lock.held ? "held" : "free") +
                    (r.lock.last_owner ? "; last owner " + DescribeOwner(*r.lock.last_owner) : ""));
  line("last used by:", r.history ? r.history->current : std::string("nothing yet"));
  line("last layout:", r.last_layout.value_or("not recorded"));
  if (r.layout_change) line("layout change:", *r.layout_change);
  std::string snaps;
  for (const auto& s : r.snapshots) snaps += (snaps.empty() ? "" : ", ") + s.name;
  line("snapshots:", snaps.empty() ? "none" : snaps);
  if (r.config_path_for_agent) line("CONFIG_PATH:", *r.config_path_for_agent + " (for the agent: the volume)");
  for (const auto& e : r.identity) {
    line("agent file:", e.agent_path + " (" + e.role + ", " + e.versions + "): " +
                            (e.on_volume ? "on the volume" : "in the image") + ", " + e.kept +
                            (e.volume_path.empty() ? "" : "; volume: " + e.volume_path + (e.present ? "" : " (none yet)")) +
                            "; a recreation loses " + e.loss);
  }
  for (const auto& w : r.warnings) line("warning:", w);
  for (const auto& p : r.problems) line("problem:", "[" + p.code + "] " + p.message);
  if (r.problems.empty()) out += "no problems\n";
  return out;
}

}  // namespace agent_init
