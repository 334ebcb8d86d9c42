// `prepare --seed-data DIR` for read-only root filesystems: an init container
// copies the image's HOME/data into DIR (an exec-capable emptyDir); the main
// container mounts DIR at HOME/data and finds everything in place, with no
// write to the image.
#pragma once

#include <string>

#include "base/dir.h"
#include "base/error.h"

namespace agent_init {

/// Copies the entries of `image_data` into `seed` (modes, owners, symlinks
/// kept), unless `seed` already holds a complete copy for `versioned_home`
/// (a marker written last). Returns whether it copied.
Result<bool> SeedData(const Dir& image_data, const Dir& seed, const std::string& versioned_home);

}  // namespace agent_init
