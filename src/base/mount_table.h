// The mount table, read with libmount from /proc/self/mountinfo (or from any
// mountinfo text, for tests) into plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace agent_init {

struct Mount {
  std::uint64_t id = 0;
  std::uint64_t parent_id = 0;
  std::string target;  // mount point
  std::string root;    // the directory of the filesystem mounted there
  std::string fstype;
  std::string source;
  std::string vfs_options;  // per-mount flags: rw, noexec, nosuid, ...
  std::string fs_options;   // per-superblock options
  bool noexec = false;
  bool readonly = false;
};

class MountTable {
 public:
  /// Where this process's mount table is read from.
  static constexpr const char* kSelf = "/proc/self/mountinfo";

  /// This process's mount table (kSelf).
  static Result<MountTable> Read();
  /// A table from mountinfo text (tests).
  static Result<MountTable> Parse(std::string_view mountinfo);

  /// The mount with this id (as statx reports it), or nullptr.
  const Mount* ById(std::uint64_t id) const;

  /// The mount that covers the absolute, symlink-free `path`: the last mount
  /// whose target is the longest prefix of it. For kernels whose statx has no
  /// mount id.
  const Mount* Covering(std::string_view path) const;

  /// How many mounts are stacked on `target`.
  size_t CountAt(std::string_view target) const;

  const std::vector<Mount>& mounts() const { return mounts_; }

 private:
  std::vector<Mount> mounts_;
};

}  // namespace agent_init
