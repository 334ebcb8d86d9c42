// Safe path handling. A Dir is an open directory fd plus the path it was
// opened as (for messages only). Everything below a Dir is resolved with
// *at() calls on fds, never by re-walking a path string, and never through a
// symlink or "..": the state volume is written by whoever owns the node
// directory, so nothing found in it may redirect agent-init.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace agent_init {

/// How a directory inside the volume is opened: never through a symlink.
inline constexpr int kDirNoFollow = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

class Dir {
 public:
  Dir() = default;
  Dir(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}

  /// Opens a directory named by the operator (--home, --state). Symlinks in
  /// that path are followed: the operator chose it. A missing directory is
  /// reported with `missing_kind`.
  static Result<Dir> OpenTrusted(const std::string& path, Kind missing_kind = Kind::kLayout);

  /// Opens `rel` (one or more components) beneath this directory. Refuses
  /// symlinks, "..", absolute paths and anything that is not a directory.
  Result<Dir> OpenSub(std::string_view rel) const;

  /// Like OpenSub for one name, std::nullopt when it does not exist (no
  /// error is made for that: the common answer where it is asked at every start).
  Result<std::optional<Dir>> OpenSubIfAny(std::string_view name) const;

  /// Like OpenSub, but creates missing components with `mode`, each one
  /// durable (its parent fsynced) before the next is made below it.
  Result<Dir> MakeSub(std::string_view rel, mode_t mode) const;

  /// Opens a regular file beneath this directory (O_CLOEXEC added). A
  /// symlink, FIFO, device or socket there is refused without being opened,
  /// and so is a file with several names (HardLinkRefusal); with O_CREAT a
  /// missing file is created (never through a symlink).
  Result<UniqueFd> OpenFile(std::string_view rel, int flags, mode_t mode = 0) const;

  /// statx of `rel` without following a symlink at any component.
  /// std::nullopt when it does not exist.
  Result<std::optional<struct statx>> Stat(std::string_view rel) const;

  /// statx of this directory itself.
  Result<struct statx> StatSelf() const;

  /// Reads a small regular file beneath this directory (at most `limit` bytes;
  /// longer files are an error). std::nullopt when it does not exist.
  Result<std::optional<std::string>> ReadSmallFile(std::string_view rel, size_t limit = 64 * 1024) const;

  /// readlinkat of `rel`; std::nullopt when it is missing or not a symlink.
  std::optional<std::string> ReadLink(std::string_view rel) const;

  struct Entry {
    std::string name;
    unsigned char type;  // DT_* from getdents; DT_UNKNOWN on some filesystems
  };
  /// The entries of this directory, without "." and "..", in directory order.
  Result<std::vector<Entry>> List() const;

  /// The display path of `rel` beneath this directory.
  std::string PathOf(std::string_view rel) const;

  /// Re-opens this directory as a second, independent fd.
  Result<Dir> Dup() const;

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }
  bool valid() const { return fd_.valid(); }

 private:
  // The parent directory of `rel` beneath this one, and the last component.
  // For a single name the parent is this directory itself (no syscall).
  struct Parent {
    UniqueFd owned;  // set only when `rel` has several components
    int fd;
    std::string leaf;
  };
  Result<Parent> OpenParent(std::string_view rel) const;

  // OpenSub (`create` empty) and MakeSub: one component at a time.
  Result<Dir> Walk(std::string_view rel, std::optional<mode_t> create) const;

  UniqueFd fd_;
  std::string path_;
};

/// True for a single path component that is safe to create or look up:
/// not empty, ".", "..", and without '/'.
bool IsPlainName(std::string_view name);

/// A plain name that is not a dot file: how agent-init names what it keeps
/// (snapshots, changes) and what it accepts back from the volume for them;
/// its own work-in-progress entries start with a dot.
bool IsVisibleName(std::string_view name);

/// Whether two statx results are the same inode (device and number).
inline bool SameInode(const struct statx& a, const struct statx& b) {
  return a.stx_ino == b.stx_ino && a.stx_dev_major == b.stx_dev_major && a.stx_dev_minor == b.stx_dev_minor;
}

/// Lexically normalises an absolute path: collapses "//", "." and "..".
std::string NormalizePath(std::string_view path);

/// Whether the absolute path `inner` is `outer` or below it, by name (a
/// trailing '/' of either ignored). A path the kernel could not tell (empty)
/// is within nothing, and holds nothing.
bool PathWithin(std::string_view inner, std::string_view outer);

/// The refusal (kDenied) of a regular file at `path` with `links` names: a
/// hard link planted in the volume may be a file from outside it (a
/// root-only one), which agent-init must not write, chown, copy or hand to
/// the agent. fs.protected_hardlinks narrows who can plant one; the check
/// does not depend on it.
Error HardLinkRefusal(const std::string& path, std::uint64_t links);

/// Opens the directory `name` in `dirfd` (O_RDONLY, O_CLOEXEC) without
/// following a symlink: an fd, or -1 with errno ELOOP for a symlink and
/// ENOTDIR for any other kind of file, as the open found it (openat2 with
/// RESOLVE_NO_SYMLINKS). Where openat2 is missing, openat(O_DIRECTORY |
/// O_NOFOLLOW) says ENOTDIR for both, and RefusalFor looks again.
int OpenDirNoFollow(int dirfd, const char* name);

/// Turns an error from opening `name` in `dirfd` (untrusted content) into a
/// message that says what was refused and why: a symlink kDenied, another
/// kind of file kLayout.
Error RefusalFor(int err, int dirfd, const std::string& name, const std::string& shown);

}  // namespace agent_init
