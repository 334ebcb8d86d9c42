// Replacing a small file on the volume so that a crash leaves either the old
// or the new content, never a torn one.
#pragma once

#include <string>
#include <string_view>

#include "dir.h"
#include "error.h"

namespace agent_init {

/// Writes `content` to `.name.tmp` in `dir`, fsyncs it, renames it over
/// `name` and fsyncs `dir`. Never follows a symlink planted at either name.
Result<void> WriteFileAtomic(const Dir& dir, const std::string& name, std::string_view content,
                             mode_t mode = 0600);

/// Removes `name` from `dir` and fsyncs `dir`; a missing file is fine.
Result<void> RemoveFileDurable(const Dir& dir, const std::string& name);

}  // namespace agent_init
