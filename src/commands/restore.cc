#include "commands/restore.h"

#include <unistd.h>

#include "base/clock.h"
#include "volume/history.h"
#include "image/home_files.h"
#include "volume/journal.h"
#include "volume/lock.h"
#include "base/log.h"
#include "commands/prepare.h"
#include "volume/snapshot.h"
#include "process/users.h"

namespace agent_init {

Result<void> Restore(const Config& config, const std::string& name) {
  if (!IsVisibleName(name)) {
    return Fail(Kind::kUsage, "restore: " + Q(name) + " is not a snapshot name",
                "agent-init inspect lists the snapshots");
  }
  std::optional<Credentials> user;
  if (!config.user.empty()) {
    auto resolved = ResolveUserFromFiles(config.user);
    if (!resolved) return std::unexpected(resolved.error());
    user = std::move(*resolved);
  }
  auto state = OpenState(config);
  if (!state) return std::unexpected(state.error());
  auto aidir = state->OpenSub(".agent-init");
  if (!aidir) {
    if (aidir.error().err == ENOENT) {
      return Fail(Kind::kUsage,
                  "restore: " + Q(state->path()) + " has no snapshots (agent-init never ran on it)");
    }
    return std::unexpected(aidir.error());
  }
  // No waiting: a running agent owns the volume, and restoring under it
  // would corrupt what it writes.
  auto lock = VolumeLock::Acquire(*aidir, 0, "restore");
  if (!lock) {
    Error e = lock.error();
    if (e.kind == Kind::kBusy)
      e.hint = "stop the agent (delete the pod or stop the container) first, then restore";
    return std::unexpected(Wrap(e, "restore"));
  }
  Journal journal(*aidir);
  auto recovered = RecoverJournal(journal, nullptr, *state, *aidir);
  if (!recovered) return std::unexpected(recovered.error());

  // The run directory is STATE/run (run layout) or STATE/data/run (state
  // layout); auto goes by what the volume holds.
  RunParent parent = config.layout == LayoutOption::kState ? "data" : "";
  if (config.layout == LayoutOption::kAuto) {
    auto in_data = state->Stat("data/run");
    auto in_state = state->Stat("run");
    if (in_data && *in_data && in_state && !*in_state) parent = "data";
  }
  const std::string run_rel = parent.empty() ? "run" : parent + "/run";
  const std::string saved = "before-restore-" + UtcStamp() + "-" + std::to_string(::getpid());
  auto restored =
      RestoreSnapshot(*state, parent, *aidir, journal, name, saved, std::max(config.keep_snapshots, 1) + 1);
  if (!restored) return std::unexpected(restored.error());
  log::Info("restored a snapshot as the run directory",
            {{"snapshot", name},
             {"run", state->PathOf(run_rel)},
             {"previous_state", aidir->PathOf("snapshots/" + saved)}});

  if (user) {
    auto run = state->OpenSub(run_rel);
    if (!run) return std::unexpected(run.error());
    auto handed = HandOver({&*run}, {&*run}, *aidir, *user, true);
    if (!handed) return handed;
  }
  return {};
}

}  // namespace agent_init
