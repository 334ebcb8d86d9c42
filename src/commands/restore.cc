#include "commands/restore.h"

#include <unistd.h>

#include <algorithm>

#include "base/clock.h"
#include "base/log.h"
#include "volume/lock.h"
#include "volume/names.h"
#include "volume/ownership.h"
#include "volume/recovery.h"
#include "volume/snapshot.h"
#include "volume/volume.h"

namespace agent_init {
namespace {

Layout RestoreLayout(LayoutOption option, const Volume& volume) {
  switch (option) {
    case LayoutOption::kRun:
      return Layout::kRun;
    case LayoutOption::kState:
      return Layout::kState;
    case LayoutOption::kAuto:
      break;
  }
  return volume.HeldLayout();
}

}  // namespace

Result<void> CheckSnapshotName(const std::string& name) {
  if (IsVisibleName(name)) return {};
  return Fail(Kind::kUsage, "restore: " + Q(name) + " is not a snapshot name",
              "agent-init inspect lists the snapshots");
}

Result<void> Restore(const Config& config, const std::optional<Credentials>& user, const std::string& name,
                     Privileged& ops) {
  if (auto named = CheckSnapshotName(name); !named) return named;
  auto volume = Volume::Open(config.state);
  if (!volume) return std::unexpected(volume.error());
  auto opened = volume->OpenBookkeeping();
  if (!opened) return std::unexpected(opened.error());
  if (!*opened) {
    return Fail(Kind::kUsage,
                "restore: " + Q(volume->path()) + " has no snapshots (agent-init never ran on it)");
  }
  if (auto writable = volume->RequireWritable(); !writable) return writable;
  // No waiting: a running agent owns the volume, and restoring under it
  // would corrupt what it writes.
  auto lock = VolumeLock::Acquire(volume->bookkeeping(), 0, config.mode);
  if (!lock) {
    Error e = volume->ExplainDenial(lock.error(), std::string(names::kBookkeeping) + "/" + names::kLock);
    if (e.kind == Kind::kBusy)
      e.hint = "stop the agent (delete the pod or stop the container) first, then restore";
    return std::unexpected(Wrap(e, "restore"));
  }
  if (auto recovered = RecoverJournal(*volume, nullptr); !recovered)
    return std::unexpected(recovered.error());

  const Layout layout = RestoreLayout(config.layout, *volume);
  const std::string saved =
      std::string(names::kBeforeRestore) + "-" + UtcStamp() + "-" + std::to_string(::getpid());
  auto restored = RestoreSnapshot(*volume, layout, name, saved, std::max(config.keep_snapshots, 1) + 1);
  if (!restored) return std::unexpected(restored.error());
  log::Info("restored a snapshot as the run directory",
            {{"snapshot", name},
             {"run", volume->dir().PathOf(Volume::RunRel(layout))},
             {"previous_state", SnapshotPath(*volume, saved)}});
  if (!user) return {};
  auto run = volume->dir().OpenSub(Volume::RunRel(layout));
  if (!run) return std::unexpected(run.error());
  return HandOver(*volume, {&*run}, {&*run}, Ids{user->uid, user->gid}, true, ops);
}

}  // namespace agent_init
