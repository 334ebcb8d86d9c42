// Something the supervisor wakes for besides signals: a file descriptor it
// polls with the signalfd, and a last call once the command has exited. The
// volume's code implements it (volume/identity_sync.h copies the agent's
// saves onto the volume), so that the supervisor needs to know nothing of
// volumes.
#pragma once

#include <vector>

namespace agent_init {

class Watcher {
 public:
  virtual ~Watcher() = default;

  /// Polled for reading.
  virtual int fd() const = 0;

  /// Every descriptor it holds: kept open when the supervisor closes what it
  /// inherited.
  virtual std::vector<int> fds() const = 0;

  /// `fd()` is readable.
  virtual void OnReadable() = 0;

  /// The command has exited: the last chance to act on what it left.
  virtual void OnCommandExited() = 0;
};

}  // namespace agent_init
