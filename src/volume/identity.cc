#include "volume/identity.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>

#include "base/dir.h"
#include "base/enum_names.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/sys.h"
#include "image/image.h"
#include "volume/carry.h"
#include "volume/names.h"

namespace agent_init {
namespace {

std::string Join(const std::string& dir, std::string_view name) {
  return dir.empty() ? std::string(name) : dir + "/" + std::string(name);
}

// "HOME/{fleet.yml, vault}" for the places of `dir` kept as `keeping`.
std::string Listed(const IdentityPlan& plan, AgentDir dir, Keeping keeping, const std::string& shown_dir) {
  std::string names;
  for (const auto& p : plan.places) {
    if (p.file->dir != dir || p.keeping != keeping) continue;
    names += (names.empty() ? "" : ", ") + std::string(p.file->name);
  }
  return names.empty() ? "" : shown_dir + "/{" + names + "}";
}

std::vector<const AgentFile*> FilesIn(const IdentityPlan& plan, AgentDir dir) {
  std::vector<const AgentFile*> out;
  for (const auto& p : plan.places) {
    if (p.file->dir == dir) out.push_back(p.file);
  }
  return out;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// The state layout with CONFIG_PATH outside the volume: the command gets
// CONFIG_PATH = STATE, and what the agent left in the old one (a container
// that ran before agent-init) moves onto the volume.
Result<void> PointConfigPathAtVolume(const IdentityPlan& plan, const IdentityOptions& o, Volume& volume,
                                     PlacedIdentity& out) {
  log::Info("CONFIG_PATH is outside the volume, where the agent's ID and enrolment would be lost with the "
            "container; the agent gets CONFIG_PATH set to the volume",
            {{"was", o.config_path}, {"now", plan.config_path}});
  out.environment.push_back({"CONFIG_PATH", plan.config_path});
  auto old = Dir::OpenTrusted(o.config_path);
  if (!old) return old.error().err == ENOENT ? Result<void>{} : std::unexpected(old.error());
  const auto files = FilesIn(plan, AgentDir::kConfig);
  auto carried = CarryAgentFiles(volume, *old, std::nullopt, "", files, /*move=*/true);
  if (!carried) return std::unexpected(Wrap(carried.error(), "carry the agent's files from CONFIG_PATH"));
  if (*carried) {
    for (const AgentFile* f : files) out.carried.emplace_back(f->name);
  }
  return {};
}

// The run layout's FLEET_ENROLL: the 7.10 - 7.12 entrypoint enrols at every
// start when it is 1.
void DecideEnrolment(const IdentityPlan& plan, Volume& volume, PlacedIdentity& out) {
  const IdentityPlace* fleet = nullptr;
  for (const auto& p : plan.places) {
    if (p.file->name == "fleet.yml" && p.file->dir == AgentDir::kConfig) fleet = &p;
  }
  const std::string enroll = Env("FLEET_ENROLL");
  if (fleet == nullptr || enroll.empty()) return;
  auto kept = volume.dir().ReadSmallFile(fleet->volume_rel);
  bool enrolled = kept && *kept && (*kept)->find("access_api_key:") != std::string::npos;
  EnrolDecision d = DecideFleetEnroll(enroll, Env("FLEET_FORCE"), enrolled,
                                      fleet->keeping != Keeping::kLost, fleet->agent_path);
  if (d.unset) {
    out.environment.push_back({"FLEET_ENROLL", std::nullopt});
    log::Info(d.message);
  } else if (!d.message.empty()) {
    log::Warn(d.message);
  }
}

}  // namespace

Result<PlacedIdentity> PlaceIdentity(const IdentityPlan& plan, const IdentityOptions& o, Volume& volume,
                                     const Dir& home, const Dir& vh) {
  PlacedIdentity out;
  // Test builds only: the mechanism off, to show the identity tests fail without it.
  if (TestSwitch("WITHOUT_IDENTITY")) return out;
  if (o.layout == Layout::kState) {
    if (!plan.config_path.empty()) {
      if (auto pointed = PointConfigPathAtVolume(plan, o, volume, out); !pointed)
        return std::unexpected(pointed.error());
    }
    return out;
  }
  const auto config_files = FilesIn(plan, AgentDir::kConfig);
  const auto home_files = FilesIn(plan, AgentDir::kHome);
  // The agent must save its ID in its home: on a read-only one (a read-only
  // root, --seed-data) it cannot start, and only the home mount helps.
  struct statvfs vfs;
  if (!plan.home_mount && ::fstatvfs(home.fd(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) {
    return Fail(Kind::kCannotPlace,
                "the agent's home " + Q(home.path()) +
                    " is read-only: the agent (`elastic-agent run`, 7.10 - 7.12) saves its ID and enrolment there "
                    "(fleet.yml, two levels above its binary) and cannot start, and agent-init may not mount here",
                "grant mount permission (CAP_SYS_ADMIN, and an unconfined AppArmor profile) so that agent-init "
                "puts the home on the volume, or give the container a writable root filesystem; 7.13+ "
                "(`elastic-agent container`) keep it in STATE_PATH");
  }
  if (plan.home_mount) {
    auto prepared = PrepareConfigHome(home, volume, config_files);
    if (!prepared) return std::unexpected(Wrap(prepared.error(), "prepare the agent's home on the volume"));
    out.home = std::move(*prepared);
  } else if (auto restored = RestoreAgentFiles(volume, home, names::kHome, config_files); !restored) {
    return std::unexpected(restored.error());
  }
  if (auto restored = RestoreAgentFiles(volume, vh, names::kVersionedHome, home_files); !restored)
    return std::unexpected(restored.error());
  for (const auto& w : plan.warnings) log::Warn(w);
  DecideEnrolment(plan, volume, out);
  if (!o.supervised) return out;
  auto add = [&](const Dir& image, const char* rel, std::vector<const AgentFile*> files) -> Result<void> {
    auto image_dir = image.Dup();
    if (!image_dir) return std::unexpected(image_dir.error());
    auto kept = volume.dir().MakeSub(rel, 0770);
    if (!kept) return std::unexpected(kept.error());
    out.synced.push_back({std::move(*image_dir), std::move(*kept), std::move(files)});
    return {};
  };
  if (!plan.home_mount) {
    if (auto added = add(home, names::kHome, config_files); !added) return std::unexpected(added.error());
  }
  if (auto added = add(vh, names::kVersionedHome, home_files); !added) return std::unexpected(added.error());
  return out;
}

std::pair<std::string, bool> ResolveConfigPath(const Volume& volume) {
  const char* env = std::getenv("CONFIG_PATH");
  if (env == nullptr || *env == '\0') return {"", false};
  std::string path = env;
  if (path.front() != '/') {
    char cwd[4096];
    path = std::string(::getcwd(cwd, sizeof cwd) ? cwd : "/") + "/" + path;
  }
  path = NormalizePath(path);
  const std::string state = NormalizePath(volume.path());
  if (path == state || path.starts_with(state + "/")) return {path, true};
  auto dir = Dir::OpenTrusted(path);
  if (!dir) return {path, false};
  const std::string real = sys::RealPathOf(dir->fd()), volume_real = sys::RealPathOf(volume.dir().fd());
  return {path, !real.empty() && !volume_real.empty() && (real == volume_real || real.starts_with(volume_real + "/"))};
}

std::string_view KeepingName(Keeping keeping) {
  static constexpr EnumName<Keeping> kNames[] = {
      {Keeping::kOnVolume, "on the volume"}, {Keeping::kConfigPath, "CONFIG_PATH"},
      {Keeping::kHomeMount, "home mount"},   {Keeping::kSupervisor, "supervisor"},
      {Keeping::kLost, "lost"},
  };
  return NameOf(keeping, kNames);
}

IdentityPlan PlanIdentity(const IdentityOptions& o) {
  IdentityPlan plan;
  const std::string state = NormalizePath(o.state);
  const std::string home = NormalizePath(o.home);
  const std::string vh = ImageDataPath(home) + "/" + o.vh_name;
  const bool redirect = o.layout == Layout::kState && !o.config_path.empty() && !o.config_on_volume;
  if (redirect) plan.config_path = state;
  plan.home_mount = o.layout == Layout::kRun && o.mounts;
  for (const AgentFile* f : AgentFilesFor(o.layout)) {
    IdentityPlace p;
    p.file = f;
    if (o.layout == Layout::kState) {
      if (f->dir == AgentDir::kHome) {
        p.agent_path = Join(state + "/" + names::kData, f->name);
        p.volume_rel = Join(names::kData, f->name);
        p.keeping = Keeping::kOnVolume;
      } else if (redirect) {
        p.agent_path = Join(state, f->name);
        p.volume_rel = std::string(f->name);
        p.keeping = Keeping::kConfigPath;
      } else {
        const std::string config = o.config_path.empty() ? state : NormalizePath(o.config_path);
        p.agent_path = Join(config, f->name);
        // Below STATE by name; a CONFIG_PATH that reaches the volume through a
        // symlink is on it all the same, under a name the plan does not know.
        if (config == state) p.volume_rel = std::string(f->name);
        else if (config.starts_with(state + "/")) p.volume_rel = Join(config.substr(state.size() + 1), f->name);
        p.keeping = Keeping::kOnVolume;
      }
    } else {
      if (f->dir == AgentDir::kConfig) {
        p.agent_path = Join(home, f->name);
        p.volume_rel = Join(names::kHome, f->name);
        p.keeping = plan.home_mount ? Keeping::kHomeMount : o.supervised ? Keeping::kSupervisor : Keeping::kLost;
      } else {
        p.agent_path = Join(vh, f->name);
        p.volume_rel = Join(names::kVersionedHome, f->name);
        p.keeping = o.supervised ? Keeping::kSupervisor : Keeping::kLost;
      }
    }
    plan.places.push_back(std::move(p));
  }
  if (o.layout == Layout::kRun) {
    if (auto lost = Listed(plan, AgentDir::kConfig, Keeping::kLost, home); !lost.empty()) {
      plan.warnings.push_back(
          "the agent keeps its ID and Fleet enrolment in " + lost +
          ", in the image beside its executable data/ (Top is two levels above its binary), and saves each by "
          "writing NAME.tmp and renaming it: without permission to mount, nothing that ends at the exec can keep "
          "them on the volume; they will not survive a recreation of the container (a new agent ID). Fix: "
          "run agent-init with --supervise (it copies every save to " +
          state + "/" + names::kHome +
          "), or grant mount permission (CAP_SYS_ADMIN; the bind method mounts that directory over the home)");
    }
    if (auto lost = Listed(plan, AgentDir::kHome, Keeping::kLost, vh); !lost.empty()) {
      plan.warnings.push_back(
          "the agent keeps its last policy and acknowledged actions in " + lost +
          ", in its versioned home with its executables (no mount can put them on the volume without breaking "
          "its installs: they rename from data/tmp into the versioned home); they will not survive a "
          "recreation of the container (the agent fetches the policy from Fleet again). Fix: run agent-init "
          "with --supervise (it copies every save to " +
          state + "/" + names::kVersionedHome + ")");
    }
  }
  return plan;
}

EnrolDecision DecideFleetEnroll(std::string_view fleet_enroll, std::string_view fleet_force, bool enrolled,
                                bool kept, const std::string& fleet_yml) {
  EnrolDecision d;
  // The entrypoint's own test: [[ ${FLEET_ENROLL} == 1 ]] (beats 239f243834
  // docker-entrypoint.elastic-agent.tmpl:70).
  if (fleet_enroll != "1") return d;
  if (enrolled && fleet_force.empty()) {
    d.unset = true;
    d.message = "FLEET_ENROLL=1: the volume holds this agent's enrolment (" + fleet_yml +
                "); FLEET_ENROLL is not passed to the command, so that the 7.10 - 7.12 entrypoint does not enrol a "
                "new agent at this start (set FLEET_FORCE=1 to enrol again anyway)";
    return d;
  }
  if (!kept) {
    d.message = "FLEET_ENROLL=1 with a 7.10 - 7.12 entrypoint enrols a new agent at every start, and its "
                "enrolment (" +
                fleet_yml +
                ") will not survive a recreation here: every new container is a new agent in Fleet. Fix: run "
                "agent-init with --supervise or with mount permission, so that the enrolment is kept on the "
                "volume (agent-init then stops passing FLEET_ENROLL once it is there); or unset FLEET_ENROLL "
                "once the agent is enrolled";
  }
  return d;
}

}  // namespace agent_init
