// The intent journal for multi-step changes to the volume. Before the first
// step a change records what it is about to do; it updates the phase as it
// goes and clears the record when done. A start that finds a record finishes
// (or rolls back) that change before anything else touches the volume.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/dir.h"
#include "base/error.h"
#include "base/record.h"

namespace agent_init {

/// The changes the journal records (Intent::op).
inline constexpr const char* kOpMigrate = "migrate";
inline constexpr const char* kOpSnapshot = "snapshot";
inline constexpr const char* kOpRestore = "restore";
inline constexpr const char* kOpCarry = "carry";  // volume/carry.h

/// The directories below STATE that the agent's files are carried into or
/// from (volume/carry.h): STATE itself (""), STATE/home,
/// STATE/versioned-home and STATE/data.
bool IsCarryPlace(std::string_view rel);

struct Intent {
  std::string op;     // kOpMigrate, kOpSnapshot, kOpRestore
  std::string id;     // names the work: conflict directory, snapshot
  std::string phase;  // where the change had got to
  Record args;        // op-specific values
};

/// Serialises and parses an intent (the journal file's content).
std::string EncodeIntent(const Intent& intent);
std::optional<Intent> DecodeIntent(std::string_view text);

class Journal {
 public:
  /// `dir` is STATE/.agent-init.
  explicit Journal(const Dir& dir) : dir_(dir) {}

  /// The unfinished intent, if any. A journal that cannot be parsed is an
  /// error naming the file: guessing could lose state.
  Result<std::optional<Intent>> Read() const;

  /// Durably records `intent` (write, fsync, rename, fsync).
  Result<void> Write(const Intent& intent);

  /// Durably removes the record.
  Result<void> Clear();

  /// The journal file's path, for messages.
  std::string Path() const;

 private:
  const Dir& dir_;
};

}  // namespace agent_init
