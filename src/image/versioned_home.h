// Finding the agent's versioned home (`HOME/data/elastic-agent-<hash>`) in an
// image, from the evidence the image and the agent's own upgrades leave
// behind. Discovery never fails: it reports what it found, what decided and
// why no decision was possible; prepare turns `error` into exit 65, inspect
// prints it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/dir.h"
#include "base/error.h"

namespace agent_init {

/// The kinds of evidence, strongest first.
enum class Rule {
  kOption,         // --versioned-home
  kHomeSymlink,    // HOME/elastic-agent -> HOME/data/<vh>/elastic-agent
  kManifest,       // HOME/manifest.yaml package.versioned-home (8.13+)
  kActiveCommit,   // HOME/.elastic-agent.active.commit
  kBuildHash,      // HOME/.build_hash.txt
  kOnlyCandidate,  // the only versioned home present
  kNone,
};

/// Stable names used in logs and in `inspect --json`.
std::string_view RuleName(Rule rule);

struct Candidate {
  std::string name;     // directory name under HOME/data
  std::string version;  // empty for the legacy name
  std::string hash;
};

struct Evidence {
  Rule rule = Rule::kNone;
  std::string source;                // the option or file that gave it
  std::string says;                  // what it says: symlink target, commit, manifest value
  std::optional<std::string> names;  // the versioned home it names, if any
  bool exists = false;               // whether `names` is a candidate present
};

struct Discovery {
  std::string data_path;
  std::vector<Candidate> candidates;
  std::vector<Evidence> evidence;  // strongest first, only what is present
  std::optional<std::string> versioned_home;
  Rule rule = Rule::kNone;
  std::vector<std::string> warnings;  // disagreeing weaker evidence, ignored entries
  std::optional<Error> error;         // set when versioned_home is not
};

/// kAll lists every candidate in HOME/data (inspect); kWhenNeeded skips the
/// listing when the option, the home symlink or the manifest names a
/// directory that exists (the restart path): `candidates` then holds only it.
enum class Listing { kAll, kWhenNeeded };

/// Looks at `home` and its `data` directory (image/image.h) and decides the
/// versioned home. `forced` is the --versioned-home value, empty for
/// discovery.
Discovery Discover(const Dir& home, const Dir& data, const std::string& forced,
                   Listing listing = Listing::kAll);

}  // namespace agent_init
