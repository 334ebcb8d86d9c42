// Copying a tree through fds (tree.h): modes, owners, times, symlinks, FIFOs
// and holes kept; reflinks where the filesystem offers them (file_data.h); a
// directory's many files by two workers (two_workers.h).
#include "base/tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <vector>

#include "base/fault.h"
#include "base/file_data.h"
#include "base/log.h"
#include "base/sys.h"
#include "base/two_workers.h"
#include "base/unique_fd.h"

namespace agent_init {
namespace {

struct Node {
  int dirfd;
  const char* name;
  std::string shown;  // path for messages
};

Result<struct statx> StatNoFollow(const Node& n) {
  struct statx st;
  if (sys::Statx(n.dirfd, n.name, AT_SYMLINK_NOFOLLOW, &st) < 0) return SysFail(errno, "stat " + Q(n.shown));
  return st;
}

// Owners are kept when we may set them (root); an unprivileged copy keeps its
// own, which is the best it can do.
void CopyOwner(int dirfd, const char* name, const struct statx& st) {
  ::fchownat(dirfd, name, st.stx_uid, st.stx_gid, AT_SYMLINK_NOFOLLOW);
}

void CopyOwner(int fd, const struct statx& st) { ::fchown(fd, st.stx_uid, st.stx_gid); }

void FillTimes(const struct statx& st, struct timespec ts[2]) {
  ts[0].tv_sec = st.stx_atime.tv_sec;
  ts[0].tv_nsec = st.stx_atime.tv_nsec;
  ts[1].tv_sec = st.stx_mtime.tv_sec;
  ts[1].tv_nsec = st.stx_mtime.tv_nsec;
}

void CopyTimes(int dirfd, const char* name, const struct statx& st) {
  struct timespec ts[2];
  FillTimes(st, ts);
  ::utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW);
}

void CopyTimes(int fd, const struct statx& st) {
  struct timespec ts[2];
  FillTimes(st, ts);
  ::futimens(fd, ts);
}

// One tree copy: its statistics, and what the filesystems turned out to
// support (asked once, not for every file).
struct CopyRun {
  CopyStats& stats;
  CopyFrom source = CopyFrom::kVolume;
  DataPaths paths{};
  uid_t euid = ::geteuid();  // the owner a new file gets
  gid_t egid = ::getegid();
};

// The permission bits a file's copy is created with: the original's when the
// copy keeps the creator's owner (no chown follows, so nobody sees it with
// bits meant for another owner), else 0600 until FillFile's chown and chmod.
// On XFS each chown and chmod is a log transaction of its own, as is the
// clone: a snapshot of files that are the creator's makes neither.
mode_t CreateMode(const struct statx& st, const CopyRun& run) {
  return st.stx_uid == run.euid && st.stx_gid == run.egid ? (st.stx_mode & 0777) : 0600;
}

Result<void> CopyNode(const Node& src, int dst_dirfd, const char* dst_name, int depth, CopyRun& run);
Result<void> CopyRegular(const Node& src, const struct statx& st, int dst_dirfd, const char* dst_name,
                         CopyRun& run);

// A directory's regular files are copied by two workers from this many on:
// each file's copy is a few metadata changes (create, clone or copy, times)
// that the filesystem makes one after the other, and another worker's fit
// between them. On XFS a snapshot of 32,768 files took 0.65x the time of one
// worker (minimal C copies, 2 cores); a third took longer than two.
constexpr std::size_t kParallelFrom = 64;

void Add(CopyStats& into, const CopyStats& s) {
  into.files += s.files;
  into.dirs += s.dirs;
  into.symlinks += s.symlinks;
  into.bytes += s.bytes;
  into.skipped += s.skipped;
  into.data_files += s.data_files;
  into.reflinked += s.reflinked;
}

// What the second worker sends back (RunOnTwoWorkers): its statistics, what
// it found the filesystems support, its error, and the entries it left to
// the first.
struct WorkerReport {
  CopyStats stats;
  DataPaths paths{};
  bool failed = false;
  Kind kind = Kind::kCannotPlace;
  int err = 0;
  std::uint32_t msg_len = 0;
  std::uint32_t hint_len = 0;
  std::uint32_t later = 0;
};

std::string EncodeReport(const CopyRun& run, const std::optional<Error>& error,
                         const std::vector<std::size_t>& later) {
  WorkerReport r;
  r.stats = run.stats;
  r.paths = run.paths;
  if (error) {
    r.failed = true;
    r.kind = error->kind;
    r.err = error->err;
    r.msg_len = static_cast<std::uint32_t>(error->msg.size());
    r.hint_len = static_cast<std::uint32_t>(error->hint.size());
  }
  r.later = static_cast<std::uint32_t>(later.size());
  std::string out(reinterpret_cast<const char*>(&r), sizeof r);
  if (error) out += error->msg + error->hint;
  if (!later.empty())
    out.append(reinterpret_cast<const char*>(later.data()), later.size() * sizeof(std::size_t));
  return out;
}

// Adds the report to `run`, its error to `error` (unless there is one) and
// its entries to `later`; false when it is not a whole report.
bool TakeReport(const std::string& text, CopyRun& run, std::optional<Error>& error,
                std::vector<std::size_t>& later) {
  WorkerReport r;
  if (text.size() < sizeof r) return false;
  std::memcpy(&r, text.data(), sizeof r);
  if (text.size() != sizeof r + r.msg_len + r.hint_len + std::size_t{r.later} * sizeof(std::size_t))
    return false;
  const char* p = text.data() + sizeof r;
  if (r.failed && !error)
    error = Error{r.kind, r.err, std::string(p, r.msg_len), std::string(p + r.msg_len, r.hint_len), {}, 0};
  p += r.msg_len + r.hint_len;
  const std::size_t first = later.size();
  later.resize(first + r.later);
  if (r.later > 0) std::memcpy(later.data() + first, p, std::size_t{r.later} * sizeof(std::size_t));
  Add(run.stats, r.stats);
  run.paths.Meet(r.paths);
  return true;
}

// Copies the entries `names` (regular files when listed) of `in` into `out`,
// by two workers from kParallelFrom on (RunOnTwoWorkers: this process and a
// forked child), each counting into statistics of its own. An entry that is
// no longer a regular file when a worker looks is left to this process,
// after both (the other kinds log, and call test hooks).
Result<void> CopyFiles(const Dir& in, const std::vector<const std::string*>& names, int out, int depth,
                       CopyRun& run) {
  CopyStats counted;
  CopyRun mine{counted, run.source, run.paths, run.euid, run.egid};
  std::optional<Error> error;
  std::vector<std::size_t> later;
  auto item = [&](std::size_t i) {
    const std::string& name = *names[i];
    Node node{in.fd(), name.c_str(), in.PathOf(name)};
    auto st = StatNoFollow(node);
    if (st && !S_ISREG(st->stx_mode)) {
      later.push_back(i);
      return true;
    }
    auto r = st ? CopyRegular(node, *st, out, name.c_str(), mine) : Result<void>(std::unexpected(st.error()));
    if (!r) error = r.error();
    return r.has_value();
  };
  std::optional<std::string> child_report;
  bool whole = RunOnTwoWorkers(
      names.size(), names.size() >= kParallelFrom, item, [&] { return EncodeReport(mine, error, later); },
      &child_report);
  Add(run.stats, counted);
  run.paths.Meet(mine.paths);
  if (child_report && !TakeReport(*child_report, run, error, later)) whole = false;
  if (error) return std::unexpected(*error);
  if (!whole) {
    return Fail(Kind::kCannotPlace, "copy the files of " + Q(in.path()) + ": its second worker died",
                "start again: the copy is made anew");
  }
  for (std::size_t i : later) {
    Node node{in.fd(), names[i]->c_str(), in.PathOf(*names[i])};
    auto r = CopyNode(node, out, names[i]->c_str(), depth + 1, run);
    if (!r) return r;
  }
  return {};
}

// Fills the empty directory `out` with the entries of the directory `src`,
// then gives it `src`'s mode, owner and times.
Result<void> FillDirectory(const Node& src, const struct statx& st, int out, int depth, CopyRun& run) {
  int in_fd = OpenDirNoFollow(src.dirfd, src.name);
  if (in_fd < 0) return std::unexpected(RefusalFor(errno, src.dirfd, src.name, src.shown));
  Dir in(UniqueFd(in_fd), src.shown);
  auto entries = in.List();
  if (!entries) return std::unexpected(entries.error());
  // The regular files first (CopyFiles), then the rest in directory order.
  std::vector<const std::string*> files;
  for (const auto& e : *entries) {
    if (e.type == DT_REG) files.push_back(&e.name);
  }
  if (auto copied = CopyFiles(in, files, out, depth, run); !copied) return copied;
  for (const auto& e : *entries) {
    if (e.type == DT_REG) continue;
    Node child{in.fd(), e.name.c_str(), in.PathOf(e.name)};
    auto r = CopyNode(child, out, e.name.c_str(), depth + 1, run);
    if (!r) return r;
  }
  CopyOwner(out, st);
  if (::fchmod(out, st.stx_mode & 07777) < 0) return SysFail(errno, "chmod copy of " + Q(src.shown));
  CopyTimes(out, st);
  ++run.stats.dirs;
  return {};
}

Result<void> CopyDirectory(const Node& src, const struct statx& st, int dst_dirfd, const char* dst_name,
                           int depth, CopyRun& run) {
  // Before the copy is made: one level deeper than a removal walks would
  // stay behind.
  if (auto deep = CheckTreeDepth(depth, "copy", src.shown); !deep) return deep;
  if (::mkdirat(dst_dirfd, dst_name, 0700) < 0) return SysFail(errno, "create copy of " + Q(src.shown));
  int out_fd = OpenDirNoFollow(dst_dirfd, dst_name);
  if (out_fd < 0) return SysFail(errno, "open copy of " + Q(src.shown));
  UniqueFd out(out_fd);
  return FillDirectory(src, st, out.get(), depth, run);
}

// Opens the regular file `src` for reading, refusing anything else, and
// from the volume a file with several names.
Result<UniqueFd> OpenRegular(const Node& src, CopyFrom source, struct stat& now) {
  // O_NONBLOCK: a file swapped for a FIFO after the stat must not block us.
  int in_fd = ::openat(src.dirfd, src.name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (in_fd < 0) return std::unexpected(RefusalFor(errno, src.dirfd, src.name, src.shown));
  UniqueFd in(in_fd);
  if (::fstat(in.get(), &now) < 0) return SysFail(errno, "stat " + Q(src.shown));
  if (!S_ISREG(now.st_mode))
    return Fail(Kind::kCannotPlace, "copy " + Q(src.shown) + ": it changed type while being copied");
  if (source == CopyFrom::kVolume && now.st_nlink > 1) return std::unexpected(HardLinkRefusal(src.shown, now.st_nlink));
  return in;
}

// The bytes, owner, mode and times of the regular file `src` (opened as
// `in`) into the new file `out`.
Result<void> FillFile(const Node& src, const struct statx& st, int in, const struct stat& now, int out,
                      CopyRun& run) {
  if (now.st_size > 0) ++run.stats.data_files;
  bool reflinked = false;
  auto bytes = CopyFileData(in, out, now.st_size, now.st_blocks, src.shown, run.paths, &reflinked);
  if (!bytes) return std::unexpected(bytes.error());
  if (reflinked) ++run.stats.reflinked;
  // Owner and mode only where the copy was made otherwise (another owner;
  // the umask; a set-group-ID directory's group; set-ID bits). A chown
  // clears the set-ID bits: the chmod follows it.
  struct stat made;
  if (::fstat(out, &made) < 0) return SysFail(errno, "stat copy of " + Q(src.shown));
  const bool chown = made.st_uid != st.stx_uid || made.st_gid != st.stx_gid;
  if (chown) CopyOwner(out, st);
  if ((chown || (made.st_mode & 07777) != (st.stx_mode & 07777)) && ::fchmod(out, st.stx_mode & 07777) < 0)
    return SysFail(errno, "chmod copy of " + Q(src.shown));
  CopyTimes(out, st);
  ++run.stats.files;
  run.stats.bytes += *bytes;
  return {};
}

Result<void> CopyRegular(const Node& src, const struct statx& st, int dst_dirfd, const char* dst_name,
                         CopyRun& run) {
  struct stat now;
  auto in = OpenRegular(src, run.source, now);
  if (!in) return std::unexpected(in.error());
  int out_fd =
      ::openat(dst_dirfd, dst_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, CreateMode(st, run));
  if (out_fd < 0) return SysFail(errno, "create copy of " + Q(src.shown));
  UniqueFd out(out_fd);
  return FillFile(src, st, in->get(), now, out.get(), run);
}

Result<void> CopyNode(const Node& src, int dst_dirfd, const char* dst_name, int depth, CopyRun& run) {
  auto st = StatNoFollow(src);
  if (!st) return std::unexpected(st.error());
  mode_t type = st->stx_mode & S_IFMT;
  switch (type) {
    case S_IFDIR:
      return CopyDirectory(src, *st, dst_dirfd, dst_name, depth, run);
    case S_IFREG:
      return CopyRegular(src, *st, dst_dirfd, dst_name, run);
    case S_IFLNK: {
      std::vector<char> buf(st->stx_size + 2 > 4096 ? st->stx_size + 2 : 4096);
      ssize_t n = ::readlinkat(src.dirfd, src.name, buf.data(), buf.size());
      if (n < 0) return SysFail(errno, "read symlink " + Q(src.shown));
      std::string target(buf.data(), static_cast<size_t>(n));
      if (::symlinkat(target.c_str(), dst_dirfd, dst_name) < 0)
        return SysFail(errno, "copy symlink " + Q(src.shown));
      CopyOwner(dst_dirfd, dst_name, *st);
      CopyTimes(dst_dirfd, dst_name, *st);
      ++run.stats.symlinks;
      return {};
    }
    case S_IFIFO: {
      if (::mkfifoat(dst_dirfd, dst_name, 0600) < 0) return SysFail(errno, "copy FIFO " + Q(src.shown));
      TestHook("copy fifo made");
      // Owner, mode and times through the FIFO just made, never by its name:
      // something swapped in there (a symlink) is refused, not followed.
      int made = ::openat(dst_dirfd, dst_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
      if (made < 0) return SysFail(errno, "open copy of FIFO " + Q(src.shown));
      UniqueFd fifo(made);
      struct stat now;
      if (::fstat(fifo.get(), &now) < 0) return SysFail(errno, "stat copy of FIFO " + Q(src.shown));
      if (!S_ISFIFO(now.st_mode)) {
        return Fail(Kind::kDenied,
                    "copy FIFO " + Q(src.shown) + ": its copy was replaced while it was made; refused",
                    "something else writes where agent-init copies the agent's state: stop it, then start again");
      }
      ::fchownat(fifo.get(), "", st->stx_uid, st->stx_gid, AT_EMPTY_PATH);
      const std::string self = sys::ProcFdPath(fifo.get());  // leads to this FIFO, never further
      ::chmod(self.c_str(), st->stx_mode & 07777);
      struct timespec ts[2];
      FillTimes(*st, ts);
      ::utimensat(AT_FDCWD, self.c_str(), ts, 0);
      ++run.stats.files;
      return {};
    }
    default:
      log::Warn("skipped a device or socket while copying state", {{"path", src.shown}});
      ++run.stats.skipped;
      return {};
  }
}

}  // namespace

Result<void> CopyEntry(const Dir& from, const std::string& name, const Dir& to, const std::string& to_name,
                       CopyStats* stats, CopyFrom source) {
  CopyStats local;
  Node src{from.fd(), name.c_str(), from.PathOf(name)};
  CopyRun run{stats ? *stats : local, source};
  auto r = CopyNode(src, to.fd(), to_name.c_str(), 0, run);
  if (!r) return std::unexpected(Wrap(r.error(), "copy to " + Q(to.PathOf(to_name))));
  return {};
}

Result<void> PlaceFileCopy(const Dir& from, const std::string& name, const Dir& to) {
  CopyStats stats;
  CopyRun run{stats};
  Node src{from.fd(), name.c_str(), from.PathOf(name)};
  auto st = StatNoFollow(src);
  if (!st) return std::unexpected(st.error());
  struct stat now;
  auto in = OpenRegular(src, run.source, now);
  if (!in) return std::unexpected(in.error());
  const std::string shown = to.PathOf(name);
  // Unnamed until it is complete and durable: a crash leaves no part of it.
  UniqueFd out(::openat(to.fd(), ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, CreateMode(*st, run)));
  if (!out.valid()) return SysFail(errno, "create an unnamed file in " + Q(to.path()) + " for " + Q(shown));
  auto filled = FillFile(src, *st, in->get(), now, out.get(), run);
  if (!filled) return filled;
  if (sys::Fsync(out.get()) < 0) return SysFail(errno, "sync " + Q(shown));
  // Through /proc, which any user may; AT_EMPTY_PATH only where /proc is
  // missing (many kernels allow it only with CAP_DAC_READ_SEARCH).
  if (::linkat(AT_FDCWD, sys::ProcFdPath(out.get()).c_str(), to.fd(), name.c_str(), AT_SYMLINK_FOLLOW) < 0 &&
      (errno != ENOENT || ::linkat(out.get(), "", to.fd(), name.c_str(), AT_EMPTY_PATH) < 0)) {
    return SysFail(errno, "link " + Q(shown));
  }
  return {};
}

Result<void> CopyDirectoryInto(const Dir& from, const std::string& name, const Dir& made, CopyStats* stats) {
  CopyStats local;
  Node src{from.fd(), name.c_str(), from.PathOf(name)};
  CopyRun run{stats ? *stats : local};
  auto st = StatNoFollow(src);
  if (!st) return std::unexpected(st.error());
  if (!S_ISDIR(st->stx_mode)) return Fail(Kind::kCannotPlace, "copy " + Q(src.shown) + ": not a directory");
  auto r = FillDirectory(src, *st, made.fd(), 0, run);
  if (!r) return std::unexpected(Wrap(r.error(), "copy to " + Q(made.path())));
  return {};
}

}  // namespace agent_init
