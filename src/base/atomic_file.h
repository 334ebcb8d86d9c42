// Replacing a small file on the volume so that a crash leaves either the old
// or the new content, never a torn one.
#pragma once

#include <string>
#include <string_view>

#include "base/dir.h"
#include "base/error.h"

namespace agent_init {

/// Whether WriteFileAtomic waits for the new name to be on disk. kLater
/// leaves the rename to the filesystem's next commit: after a power loss
/// the name holds the old content or the new, each whole. For records that
/// are rewritten at every start and that nothing else depends on.
enum class NameSync { kNow, kLater };

/// Writes `content` to `.name.tmp` in `dir`, fsyncs it, renames it over
/// `name` and (kNow) fsyncs `dir`. Never follows a symlink planted at either
/// name, and never writes through whatever is at `name` (a hard link to
/// another file): the name gets a new file.
Result<void> WriteFileAtomic(const Dir& dir, const std::string& name, std::string_view content,
                             mode_t mode = 0600, NameSync name_sync = NameSync::kNow);

/// Removes `name` from `dir` and fsyncs `dir`; a missing file is fine.
Result<void> RemoveFileDurable(const Dir& dir, const std::string& name);

}  // namespace agent_init
