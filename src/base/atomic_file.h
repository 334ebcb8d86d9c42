// Replacing a small file on the volume so that a crash leaves either the old
// or the new content, never a torn one.
#pragma once

#include <string>
#include <string_view>

#include "base/dir.h"
#include "base/error.h"

namespace agent_init {

/// Writes `content` to `.name.tmp` in `dir`, fsyncs it, renames it over
/// `name` and fsyncs `dir`. Never follows a symlink planted at either name.
Result<void> WriteFileAtomic(const Dir& dir, const std::string& name, std::string_view content,
                             mode_t mode = 0600);

/// Overwrites `name` in place, without syncing: for informational files
/// (the lock's owner record) where a torn write after a crash is harmless
/// and every start must not wait for the disk. The new content is written
/// over the old, then the file is cut to its length: a reader racing the
/// write (or a crash between the two) may see the new content followed by
/// the end of the old, so records read this way take the first value of
/// each key. Something planted at `name` that is not a regular file (a
/// symlink, a FIFO) is removed, never written through.
Result<void> WriteFileFast(const Dir& dir, const std::string& name, std::string_view content,
                           mode_t mode = 0600);

/// Removes `name` from `dir` and fsyncs `dir`; a missing file is fine.
Result<void> RemoveFileDurable(const Dir& dir, const std::string& name);

}  // namespace agent_init
