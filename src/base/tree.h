// Copying, comparing and removing directory trees through fds, never
// following a symlink: used to move state between the image and the volume,
// for snapshots and for seeding data. Copies keep modes, owners, timestamps,
// symlinks, FIFOs and holes in sparse files; devices and sockets are skipped
// with a warning, since state never needs them and an untrusted volume must
// not be able to plant them elsewhere.
#pragma once

#include <cstdint>
#include <string>

#include "base/dir.h"
#include "base/error.h"

namespace agent_init {

struct CopyStats {
  std::uint64_t files = 0;
  std::uint64_t dirs = 0;
  std::uint64_t symlinks = 0;
  std::uint64_t bytes = 0;
  std::uint64_t skipped = 0;     // devices and sockets
  std::uint64_t data_files = 0;  // regular files with data (what a reflink can share)
  std::uint64_t reflinked = 0;   // of those, the ones whose extents were shared (FICLONE)
  bool subvolume = false;        // all of it shared at once: a btrfs snapshot, no file walked
};

/// Deepest directory nesting a tree operation accepts. Each level holds one
/// or two fds open; the agent never nests state anywhere near this deep.
inline constexpr int kMaxTreeDepth = 256;

/// A walk that `verb`s `path` at `depth`: an error (kCannotPlace) once it is
/// kMaxTreeDepth levels down.
Result<void> CheckTreeDepth(int depth, std::string_view verb, const std::string& path);

/// Where a copy reads from. The volume is not trusted: a regular file there
/// with several names (hard links) may be a file from outside it, and its
/// copy, a new file with one name, would be chowned to the agent like any
/// other. A copy from the volume refuses it (HardLinkRefusal). The image's
/// hard links are its author's, and copied as files.
enum class CopyFrom { kVolume, kImage };

/// Copies the entry `name` of `from` (file, symlink, FIFO or whole directory)
/// to the new name `to_name` in `to`, which must not exist yet. Does not sync:
/// call SyncFilesystem before making the copy visible.
Result<void> CopyEntry(const Dir& from, const std::string& name, const Dir& to, const std::string& to_name,
                       CopyStats* stats = nullptr, CopyFrom source = CopyFrom::kVolume);

/// Copies the directory `name` of `from` (the volume) into `made`, an empty
/// directory the caller made (a btrfs subvolume): its entries, then its
/// mode, owner and times. Does not sync, as CopyEntry.
Result<void> CopyDirectoryInto(const Dir& from, const std::string& name, const Dir& made,
                               CopyStats* stats = nullptr);

/// Copies the regular file `name` of `from` (the volume) to the same name in `to`, where
/// it appears complete and durable, or not at all: written unnamed
/// (O_TMPFILE), synced, then linked. For moves across btrfs subvolumes,
/// which rename refuses.
Result<void> PlaceFileCopy(const Dir& from, const std::string& name, const Dir& to);

/// Removes the entry `name` of `dir` and, for a directory, everything below
/// it. Symlinks are removed, never followed. A missing entry is not an error.
/// A btrfs subvolume goes at once where we may delete one.
Result<void> RemoveEntry(const Dir& dir, const std::string& name);

/// The space the entry `name` of `dir` and everything below it take on
/// disk (allocated blocks, so holes count for nothing), never following a
/// symlink: what a copy of it needs.
Result<std::uint64_t> SpaceUsed(const Dir& dir, const std::string& name);

/// True when the regular files `a` in `dir_a` and `b` in `dir_b` have the
/// same size and bytes.
Result<bool> SameFileContent(const Dir& dir_a, const std::string& a, const Dir& dir_b, const std::string& b);

/// True when the trees `a` and `b` hold the same names, types, file bytes
/// and symlink targets (modes, owners and times aside), followed nowhere.
Result<bool> SameTree(const Dir& a, const Dir& b);

/// syncfs(2) on the filesystem that holds `dir`: one call that makes every
/// copy written there durable before a rename publishes it.
Result<void> SyncFilesystem(const Dir& dir);

/// fsync(2) of the directory itself, so that renames and unlinks in it are
/// durable.
Result<void> SyncDir(const Dir& dir);

}  // namespace agent_init
