// The run layout's files that stay in the image for this start (no mount
// keeps them, volume/identity.h): the image's copy is the agent's working
// copy, the volume's the kept one.
//   at every start  where the volume holds a file, it is put in the agent's
//                   place (a new container starts with the image's); where
//                   it holds none, the image's is carried onto the volume
//                   (the first start with agent-init), by the rule of
//                   volume/carry.h
//   --supervise     agent-init outlives the exec: it watches the agent's
//                   places (inotify, no timer) and copies every save onto the
//                   volume as it lands (a NAME.tmp renamed over NAME), durably
//                   and atomically: a copy beside the volume's, synced, then
//                   renamed over it; vault/ before fleet.enc. Once more when
//                   the agent has exited.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/dir.h"
#include "base/error.h"
#include "base/unique_fd.h"
#include "image/agent_files.h"
#include "process/watcher.h"
#include "volume/volume.h"

namespace agent_init {

/// One directory of the agent's (HOME or the versioned home) and where the
/// volume keeps its files.
struct SyncedPlace {
  Dir image;                            // the agent's directory
  Dir kept;                             // STATE/home or STATE/versioned-home
  std::vector<const AgentFile*> files;  // the agent's files there
};

/// At start: the volume's copies put in the agent's place, or the image's
/// carried onto the volume (`volume_rel` below STATE).
Result<void> RestoreAgentFiles(Volume& volume, const Dir& image, const std::string& volume_rel,
                               const std::vector<const AgentFile*>& files);

/// Under --supervise: every save of the agent's files in `places` copied to
/// the volume.
class AgentFileSync final : public Watcher {
 public:
  static Result<std::unique_ptr<AgentFileSync>> Start(std::vector<SyncedPlace> places);

  int fd() const override { return inotify_.get(); }
  std::vector<int> fds() const override;
  void OnReadable() override;
  void OnCommandExited() override;

  /// Copies every file of every place now (what OnCommandExited does).
  void SyncAll();

 private:
  explicit AgentFileSync(std::vector<SyncedPlace> places, UniqueFd inotify)
      : places_(std::move(places)), inotify_(std::move(inotify)) {}

  struct Watch {
    int wd;
    size_t place;
    const AgentFile* dir_file;  // set for the watch on a directory file's own content (vault/)
  };
  void WatchDirectoryFile(size_t place, const AgentFile* f);
  void SyncOne(size_t place, const AgentFile* f);

  std::vector<SyncedPlace> places_;
  UniqueFd inotify_;
  std::vector<Watch> watches_;
};

}  // namespace agent_init
