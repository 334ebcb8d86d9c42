// Parsers for the small files in an agent home that name the versioned home.
// Pure functions over strings, so that they can be unit-tested and fuzzed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace agent_init {

/// A versioned-home directory name split into its parts:
/// `elastic-agent-<hash>` or `elastic-agent-<version>-<hash>`.
struct VersionedHomeName {
  std::string version;  // empty for the legacy `elastic-agent-<hash>` form
  std::string hash;     // 6 lowercase hex characters
};

/// Parses a directory name under `HOME/data`; std::nullopt when it is not a
/// versioned home. `<version>` is `N.N.N` with an optional `-QUALIFIER`
/// (letters, digits, dots), e.g. `8.13.0-SNAPSHOT`.
std::optional<VersionedHomeName> ParseVersionedHomeName(std::string_view name);

/// The short hash (first 6 characters, lowercased) of a commit file such as
/// `.elastic-agent.active.commit` or `.build_hash.txt`: the full commit or only
/// its first 6 characters, with or without surrounding whitespace.
/// std::nullopt when the content is not a hex commit of at least 6 characters.
std::optional<std::string> ParseCommitHash(std::string_view content);

/// `package.versioned-home` from an 8.13+ `manifest.yaml`, with the leading
/// `data/` removed (e.g. `elastic-agent-abc123`). Understands the subset of
/// YAML the agent writes: block mappings, optional quotes, comments.
/// std::nullopt when the key is absent or its value is not `data/<name>`.
std::optional<std::string> ParseManifestVersionedHome(std::string_view yaml);

}  // namespace agent_init
