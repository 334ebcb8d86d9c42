// Replacing a small file on the volume so that a crash leaves either the old
// or the new content, never a torn one.
#pragma once

#include <string>
#include <string_view>

#include "base/dir.h"
#include "base/error.h"

namespace agent_init {

/// What WriteFileAtomic waits for. kNow: the content and the name are on
/// disk when it returns. kNameLater: the content is; the rename is left to
/// the filesystem's next commit, and after a power loss the name holds the old
/// content or the new, each whole. kNone: neither is waited for; after a power
/// loss the name may also hold an empty file. While the system runs, readers
/// see the old content or the new, each whole, whichever is chosen. kNone is
/// for a record that nothing needs after a power loss (the lock's owner: a
/// power loss releases the lock, and the next holder writes its own).
enum class Durability { kNow, kNameLater, kNone };

/// Writes `content` to `.name.tmp` in `dir`, fsyncs it (but kNone), renames it
/// over `name` and (kNow) fsyncs `dir`. Never follows a symlink planted at either
/// name, and never writes through whatever is at `name` (a hard link to
/// another file): the name gets a new file.
Result<void> WriteFileAtomic(const Dir& dir, const std::string& name, std::string_view content,
                             mode_t mode = 0600, Durability durability = Durability::kNow);

/// Removes `name` from `dir` and fsyncs `dir`; a missing file is fine.
Result<void> RemoveFileDurable(const Dir& dir, const std::string& name);

}  // namespace agent_init
