// The one on-disk format for agent-init's small bookkeeping files on the
// volume (journal, owner, history): lines of `key value`, values escaped so
// that any byte survives a round trip. Parsing is total: it never throws and
// rejects what it does not understand, since the volume is not trusted.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agent_init {

using Record = std::vector<std::pair<std::string, std::string>>;

/// Encodes the pairs, one per line. Keys must be [a-z0-9_-]+.
std::string EncodeRecord(const Record& record);

/// Parses what EncodeRecord wrote; std::nullopt on anything malformed
/// (bad key, bad escape, missing final newline).
std::optional<Record> DecodeRecord(std::string_view text);

/// The value of the first `key`, or std::nullopt.
std::optional<std::string> Lookup(const Record& record, std::string_view key);

/// Escapes bytes outside printable ASCII, '%' and ' ' as %XX.
std::string EscapeValue(std::string_view value);
std::optional<std::string> UnescapeValue(std::string_view value);

}  // namespace agent_init
