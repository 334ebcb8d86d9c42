// Which versioned home last used the volume, with a short history of
// changes: how agent-init notices an image change (and a return to an older
// one) between starts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/dir.h"
#include "base/error.h"

namespace agent_init {

struct HistoryEntry {
  std::string at;  // UTC, ISO 8601
  std::string from;
  std::string to;
};

struct History {
  std::string current;                // versioned-home name that last used the volume
  std::string current_hash;           // its hash, when the name carries one
  std::vector<HistoryEntry> changes;  // oldest first, at most kMaxHistory
};

inline constexpr size_t kMaxHistory = 20;

std::string EncodeHistory(const History& history);
std::optional<History> DecodeHistory(std::string_view text);

/// STATE/.agent-init/history, std::nullopt before the first start. A file
/// agent-init cannot parse is an error naming it.
Result<std::optional<History>> ReadHistory(const Dir& aidir);
Result<void> WriteHistory(const Dir& aidir, const History& history);

/// Records `to` as the current versioned home (and the change from the
/// previous one, if any), trimming the history to kMaxHistory entries.
History WithChange(History history, const std::string& to, const std::string& at);

}  // namespace agent_init
