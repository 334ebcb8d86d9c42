#include "commands/eject.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "base/clock.h"
#include "base/log.h"
#include "base/tree.h"
#include "image/agent_files.h"
#include "image/image.h"
#include "image/layout_decision.h"
#include "volume/carry.h"
#include "volume/layout_transition.h"
#include "volume/lock.h"
#include "volume/names.h"
#include "volume/recovery.h"
#include "volume/state_path.h"
#include "volume/volume.h"

namespace agent_init {
namespace {

bool IsSymlinkAt(const Dir& dir, const char* name) {
  auto st = dir.Stat(name);
  return st && *st && S_ISLNK((*st)->stx_mode);
}

bool ExistsAt(const Dir& dir, const char* name) {
  auto st = dir.Stat(name);
  return st && *st;
}

// The volume as the agent's own container mode will find it: everything
// that would make it start elsewhere, or on something of agent-init's.
Result<void> Verify(Volume& volume, const Dir& data) {
  std::vector<std::string> wrong;
  if (ExistsAt(volume.dir(), names::kRun))
    wrong.push_back(Q(volume.dir().PathOf(names::kRun)) + " still exists (nothing reads it)");
  if (IsSymlinkAt(data, names::kRun) || !ExistsAt(data, names::kRun))
    wrong.push_back(Q(data.PathOf(names::kRun)) + " is not the run directory");
  for (const char* link : {names::kInstall, names::kTmp}) {
    if (IsSymlinkAt(data, link)) wrong.push_back(Q(data.PathOf(link)) + " is still agent-init's symlink");
  }
  if (auto marker = RefuseInstalledMarker(data); !marker) wrong.push_back(marker.error().msg);
  if (auto journal = volume.journal().Read(); !journal || *journal)
    wrong.push_back("a change is unfinished in " + Q(volume.journal().Path()));
  // The run layout's places of the agent's own files hold none of them now.
  for (const char* rel : {names::kHome, names::kVersionedHome}) {
    auto place = volume.dir().OpenSub(rel);
    if (!place) continue;
    for (Layout l : {Layout::kRun, Layout::kState}) {
      for (const AgentFile* f : AgentFilesFor(l)) {
        if (!ExistsAt(*place, std::string(f->name).c_str())) continue;
        if (f->role == FileRole::kEnrolment) {  // the image's copy, unless enrolment wrote it
          auto text = place->ReadSmallFile(f->name);
          if (text && *text && !IsEnrolledConfig(**text)) continue;
        }
        wrong.push_back(Q(place->PathOf(f->name)) + " is still where only agent-init's home keeps it");
      }
    }
  }
  if (wrong.empty()) return {};
  Error e =
      MakeError(Kind::kLayout, 0, "eject: the volume is not in the agent's own layout: " + wrong.front(),
                "agent-init's bookkeeping is kept; start the agent once with agent-init, then eject again");
  for (size_t i = 1; i < wrong.size(); ++i) e.also.push_back(wrong[i]);
  return std::unexpected(e);
}

// agent-init's own files go; what holds the agent's state (snapshots, and
// the copies a migration or a re-link set aside) stays unless asked.
Result<std::vector<std::string>> RemoveBookkeeping(Volume& volume, bool remove_snapshots) {
  const Dir& aidir = volume.bookkeeping();
  for (const char* name : {names::kOwner, names::kHistory, names::kLayoutRecord, names::kChowned,
                           names::kMigrate, names::kRestorePartial, names::kHomeFiles, names::kCarry,
                           names::kLock}) {
    auto removed = RemoveEntry(aidir, name);
    if (!removed) return std::unexpected(removed.error());
  }
  std::vector<std::string> kept;
  // Anything else (a directory the operator set aside there) is left as found.
  auto entries = aidir.List();
  if (!entries) return std::unexpected(entries.error());
  for (const auto& e : *entries) {
    if (e.name != names::kSnapshots && e.name != names::kConflicts && e.name != names::kDisplaced)
      kept.push_back(aidir.PathOf(e.name) + ": not agent-init's, left as found");
  }
  const std::pair<const char*, const char*> holding[] = {
      {names::kSnapshots, "snapshots of the agent's state (remove with eject --remove-snapshots)"},
      {names::kConflicts, "the image's copies that lost to the volume's in a migration"},
      {names::kDisplaced, "what agent-init moved aside in STATE/data"},
  };
  for (auto [name, why] : holding) {
    if (!ExistsAt(aidir, name)) continue;
    if (remove_snapshots && std::string_view(name) == names::kSnapshots) {
      auto removed = RemoveEntry(aidir, name);
      if (!removed) return std::unexpected(removed.error());
      continue;
    }
    kept.push_back(aidir.PathOf(name) + ": " + why);
  }
  if (kept.empty()) ::unlinkat(volume.dir().fd(), names::kBookkeeping, AT_REMOVEDIR);
  return kept;
}

}  // namespace

Result<Ejected> Eject(const Config& config, const std::vector<std::string>& command, bool remove_snapshots) {
  OpenedImage opened = OpenImage(config.home, config.versioned_home, Listing::kWhenNeeded);
  if (opened.failure) return std::unexpected(opened.failure->Wrapped());
  const Image& image = opened.image;
  LayoutDecision decision = DecideLayout(config.layout, command, config.value_options, image.vh);
  if (decision.layout == Layout::kRun) {
    return Fail(
        Kind::kLayout,
        "eject: this image runs the agent with `elastic-agent run` (" + decision.evidence +
            "): in its own mode it keeps the state in " + Q(image.vh.PathOf(names::kRun)) +
            ", inside the container, where it is lost when the container is recreated (7.10 - 7.12, "
            "cloud-on-k8s#4260)",
        "keep agent-init for this image; move to an image that runs `elastic-agent container` (7.13+), "
        "start it once with agent-init, then eject");
  }
  auto volume = Volume::Open(config.state);
  if (!volume) return std::unexpected(volume.error());
  Ejected out;
  out.state = NormalizePath(volume->path());
  out.run = volume->dir().PathOf(names::kDataRun);
  auto opened_bk = volume->OpenBookkeeping();
  if (!opened_bk) return std::unexpected(opened_bk.error());
  if (!*opened_bk) {
    log::Info("agent-init never ran on this volume: nothing to eject", {{"state", volume->path()}});
    return out;
  }
  if (auto writable = volume->RequireWritable(); !writable) return std::unexpected(writable.error());
  auto lock = VolumeLock::Acquire(volume->bookkeeping(), 0, config.mode);
  if (!lock) {
    Error e = volume->ExplainDenial(lock.error(), std::string(names::kBookkeeping) + "/" + names::kLock);
    if (e.kind == Kind::kBusy)
      e.hint = "stop the agent (delete the pod or stop the container) first, then eject";
    return std::unexpected(Wrap(e, "eject"));
  }
  if (auto recovered = RecoverJournal(*volume, &image.vh); !recovered)
    return std::unexpected(recovered.error());
  // The state where the agent's container mode reads it.
  auto carried = CarryOverLayout(*volume, Layout::kState, config.keep_snapshots, "eject-" + UtcStamp());
  if (!carried) return std::unexpected(Wrap(carried.error(), "eject"));
  out.moved = *carried;
  auto data = volume->MakeData();
  if (!data) return std::unexpected(data.error());
  auto run = volume->MakeRun(Layout::kState);
  if (!run) return std::unexpected(run.error());
  // The 7.x links point into this image; the agent makes its own
  // directories (7.15+ installs into the image itself).
  for (const char* link : {names::kInstall, names::kTmp}) {
    if (IsSymlinkAt(*data, link) && ::unlinkat(data->fd(), link, 0) < 0)
      return SysFail(errno, "eject: remove " + Q(data->PathOf(link)));
  }
  if (decision.generation == Generation::kV1) {
    log::Warn(
        "7.13 and 7.14 install their components into STATE_PATH/data/install: without agent-init the "
        "volume must allow executing (no noexec), or keep agent-init for those versions",
        {{"state", volume->path()}});
  }
  // The agent's Config where its container mode reads it with CONFIG_PATH
  // unset: an older CONFIG_PATH outside the volume gives its files up.
  if (const char* cp = std::getenv("CONFIG_PATH"); cp != nullptr && *cp != '\0' &&
                                                    NormalizePath(cp) != NormalizePath(volume->path())) {
    out.config_path = cp;
    if (auto old = Dir::OpenTrusted(cp); old) {
      std::vector<const AgentFile*> config_files;
      for (const AgentFile* f : AgentFilesFor(Layout::kState)) {
        if (f->dir == AgentDir::kConfig) config_files.push_back(f);
      }
      auto given_up = CarryAgentFiles(*volume, *old, std::nullopt, "", config_files, /*move=*/true);
      if (!given_up) return std::unexpected(Wrap(given_up.error(), "eject"));
    }
  }
  if (auto verified = Verify(*volume, *data); !verified) return std::unexpected(verified.error());
  // The run layout's home on the volume (copies of the image's files and
  // mount points, the agent's files moved out above) is agent-init's. A
  // container that still has it mounted keeps its mount points busy.
  std::vector<std::string> busy;
  for (const char* rel : {names::kHome, names::kVersionedHome}) {
    if (auto removed = RemoveEntry(volume->dir(), rel); !removed) {
      if (removed.error().err != EBUSY) return std::unexpected(Wrap(removed.error(), "eject"));
      busy.push_back(volume->dir().PathOf(rel) +
                     ": agent-init's copy of the agent's home, still mounted by a container here; remove it "
                     "once none runs");
    }
  }
  auto kept = RemoveBookkeeping(*volume, remove_snapshots);
  if (!kept) return std::unexpected(Wrap(kept.error(), "eject: remove agent-init's bookkeeping"));
  out.kept = std::move(*kept);
  out.kept.insert(out.kept.end(), busy.begin(), busy.end());
  log::Info("ejected: the volume is the agent's own STATE_PATH",
            {{"state", out.state}, {"run", out.run}, {"kept", std::to_string(out.kept.size())}});
  return out;
}

std::string ManifestChange(const Ejected& e) {
  std::string out =
      "The volume " + e.state + " is in the agent's own layout (run state in " + e.run +
      ").\n"
      "To run the agent without agent-init, change the manifest (or the container's command):\n"
      "  - remove the agent-init init container, or `agent-init ... --` in front of the agent's command;\n"
      "  - run the image's own command: `elastic-agent container` (the image's entrypoint);\n"
      "  - set the environment variable STATE_PATH to the volume's mount path (" +
      e.state +
      " here);\n"
      "  - leave CONFIG_PATH unset (or set it to the same path): the agent's ID and enrolment (fleet.enc, vault/) "
      "are there;\n"
      "  - keep the volume mounted there.\n";
  if (!e.config_path.empty()) {
    out += "CONFIG_PATH is " + e.config_path +
           " here: outside the volume the agent's ID would be lost with every container; its files there were "
           "moved onto the volume. ECK sets it for Fleet agents before 8.13: keep agent-init for those.\n";
  }
  for (const auto& k : e.kept) out += "Kept: " + k + "\n";
  return out;
}

}  // namespace agent_init
