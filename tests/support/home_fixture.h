// Builds agent homes shaped like the images (see ../shared/notes), in a
// temporary directory.
#pragma once

#include <string>
#include <vector>

#include "config.h"

namespace agent_init::test {

/// An agent home under `root`: HOME/data/<versioned homes>.
class HomeFixture {
 public:
  explicit HomeFixture(std::string home) : home_(std::move(home)) {}

  const std::string& home() const { return home_; }
  std::string Path(const std::string& rel) const { return home_ + "/" + rel; }
  std::string Vh(const std::string& name) const { return home_ + "/data/" + name; }

  /// HOME/data/<name> with the given subdirectories and an executable
  /// `elastic-agent` in it.
  HomeFixture& VersionedHome(const std::string& name, const std::vector<std::string>& subdirs = {});
  /// HOME/elastic-agent -> target (absolute targets are used as given).
  HomeFixture& HomeSymlink(const std::string& target);
  HomeFixture& File(const std::string& rel, const std::string& content);

 private:
  std::string home_;
};

/// An image whose agent is agent-sim (`sim`, the binary): HOME/data/<vh>
/// with `dirs`, agent-sim as the agent and as the packaged or pre-extracted
/// component (in downloads/ or components/), the home symlink, data/tmp.
HomeFixture MakeSimHome(const std::string& home, const std::string& vh, const std::vector<std::string>& dirs,
                        const std::string& sim);

/// One image per versioned home name, at ROOT/image-<name>: its versioned
/// home (with `subdirs`) and the home symlink to its agent. For version
/// changes between them.
void MakeImages(const std::string& root, const std::vector<std::string>& vhs,
                const std::vector<std::string>& subdirs = {});

/// The 7.11.1 image's versioned home, relative to a test's directory.
inline constexpr const char* kVh = "home/data/elastic-agent-9b2fec";

/// The 7.11.1 image: data/elastic-agent-9b2fec/{elastic-agent,downloads,install,run},
/// the home symlink to it and .build_hash.txt.
HomeFixture Make711Home(const std::string& home);

/// A 7.11.1 home at ROOT/home and an empty volume at ROOT/state, and the
/// Config for them in `mode`, as the library calls of the commands take it.
Config Config711(const std::string& root, Mode mode);

}  // namespace agent_init::test
