// btrfs subvolumes, for snapshots that cost nothing: a snapshot of a
// subvolume shares all of it at once, where a reflink copy still walks every
// file. Everything here is optional: a call that the filesystem, the kernel
// or our privileges refuse says so with `false`, and the caller copies.
#pragma once

#include <string>

#include "base/dir.h"
#include "base/error.h"

namespace agent_init::btrfs {

/// True when `name` in `dir` is a directory that is the root of a btrfs
/// subvolume (a subvolume or a snapshot), never following a symlink.
bool IsSubvolume(const Dir& dir, const std::string& name);

/// True when the opened directory `fd` is the root of a btrfs subvolume.
bool IsSubvolumeRoot(int fd);

/// True when the directory `dir` is on btrfs.
bool IsBtrfs(const Dir& dir);

/// Creates `name` in `dir` as an empty subvolume with `mode`. False when
/// `dir` is not on btrfs or the kernel refuses (the caller makes a plain
/// directory); an error only for what a plain directory would fail on too
/// (the name exists, no space).
Result<bool> MakeSubvolume(const Dir& dir, const std::string& name, mode_t mode);

/// Snapshots the subvolume `name` in `from` as the new, writable subvolume
/// `to_name` in `to`: all of it at once, durable when it returns (the
/// kernel commits the snapshot). False, with nothing made, when a snapshot
/// cannot stand in for a copy: `name` is not a subvolume root, it holds
/// nested subvolumes (a snapshot leaves them out), another filesystem, or
/// the kernel refuses (we do not own it, an old kernel).
Result<bool> Snapshot(const Dir& from, const std::string& name, const Dir& to, const std::string& to_name);

/// Deletes the subvolume `name` of the directory `dirfd` with everything in
/// it, at once (a raw fd: tree walks hold those). False when it is not a
/// subvolume root or we may not (a subvolume that is not empty takes
/// CAP_SYS_ADMIN or the user_subvol_rm_allowed mount option): the caller
/// removes it file by file, and rmdir takes the emptied subvolume.
bool Destroy(int dirfd, const std::string& name);

}  // namespace agent_init::btrfs
