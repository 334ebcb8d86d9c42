// The bytes of a regular file into a new one (tree_copy.cc): shared where the
// filesystem can (a reflink), else copied by the kernel (copy_file_range),
// else read and written; only the data segments, so holes stay holes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/error.h"

namespace agent_init {

/// What a tree copy found the filesystems support: asked by the first file,
/// not by every one. Meet() keeps what both of two copies found.
struct DataPaths {
  bool reflink = true;  // FICLONE
  bool cfr = true;      // copy_file_range
  void Meet(const DataPaths& other) {
    reflink = reflink && other.reflink;
    cfr = cfr && other.cfr;
  }
};

/// Copies the `size` bytes (`blocks` allocated) of the file open as `in`
/// into the empty file `out`; `shown` names it in errors. Returns the bytes
/// copied; `*reflinked` says whether they were shared instead.
Result<std::uint64_t> CopyFileData(int in, int out, off_t size, blkcnt_t blocks, const std::string& shown,
                                   DataPaths& paths, bool* reflinked);

}  // namespace agent_init
