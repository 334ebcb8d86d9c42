// powerfs: a FUSE filesystem over a backing directory that keeps, beside
// the live tree it serves, what a disk would still hold after a power loss,
// in the spirit of LazyFS (which Jepsen uses). The rules, those POSIX gives
// and a program may rely on:
//   - a file's data (and its mode, owner and times) is durable once the file
//     is fsynced;
//   - a name (create, mkdir, symlink, mknod, link, unlink, rmdir) is durable
//     once its directory is fsynced; a rename (or an exchange) once either
//     of its directories is, whole, as the journaled filesystems volumes use
//     (ext4, XFS, btrfs) commit one rename;
//   - everything is durable after syncfs. FUSE does not pass syncfs(2) on
//     (the kernel asks only virtiofs), so a program announces it: a lookup
//     of the name `.powerfs-syncfs` in any directory (agent-init's test
//     builds make one after every syncfs, AGENT_INIT_TEST_SYNCFS_NAME).
// A file whose name is durable but whose data never was comes back empty:
// the worst a disk may do. When the filesystem is unmounted (the power
// loss) the backing directory is replaced by the durable tree, and the next
// mount starts from it, all of it durable, as after a reboot.
//
//   powerfs BACKING MOUNTPOINT    (as root; BACKING on tmpfs, which never
//                                  reuses an inode number)
// It writes "ready\n" to the fd named by POWERFS_READY_FD once mounted, and
// on exit a line of what the power loss kept to stderr.
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <fcntl.h>
#include <fuse.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr const char* kSyncfsName = ".powerfs-syncfs";

struct Meta {
  mode_t mode = 0;  // type and permissions
  uid_t uid = 0;
  gid_t gid = 0;
  struct timespec mtime {};
  dev_t rdev = 0;
};

// A change of names not yet durable.
struct Op {
  enum Kind { kAdd, kRemove, kRename, kExchange } kind;
  ino_t parent1;
  std::string name1;
  ino_t parent2 = 0;  // kRename: the destination; kExchange: the other side
  std::string name2;
  ino_t ino = 0;  // kAdd: the new entry; kRename: what moved
};

struct State {
  int root = -1;  // the backing directory
  ino_t root_ino = 0;
  std::map<ino_t, std::map<std::string, ino_t>> dirs;  // durable entries of each directory
  std::map<ino_t, std::string> data;                    // durable bytes of each regular file
  std::map<ino_t, std::string> targets;                 // symlink targets (fixed at creation)
  std::map<ino_t, Meta> meta;                           // durable, or as created
  std::vector<Op> pending;
};

State g;
FILE* g_trace = nullptr;  // POWERFS_TRACE=FILE: every change and sync, for a failing sweep

void Trace(const char* what, const std::string& a, const std::string& b = {}) {
  if (g_trace) std::fprintf(g_trace, "%s %s %s\n", what, a.c_str(), b.c_str());
}

std::string Rel(const char* path) {
  while (*path == '/') ++path;
  return *path ? path : ".";
}

std::string Parent(const std::string& rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string::npos ? "." : rel.substr(0, slash);
}

std::string Base(const std::string& rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

bool Lstat(const std::string& rel, struct stat& st) { return ::fstatat(g.root, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0; }

ino_t InoOf(const std::string& rel) {
  struct stat st {};
  return Lstat(rel, st) ? st.st_ino : 0;
}

Meta MetaOf(const struct stat& st) { return Meta{st.st_mode, st.st_uid, st.st_gid, st.st_mtim, st.st_rdev}; }

std::string ReadAll(int fd) {
  std::string out;
  char buf[1 << 16];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    at += n;
  }
  return out;
}

// A new entry, given to the caller (the daemon makes it as root): its
// kind, target and creation-time metadata are known from now on; its name
// waits for its directory's fsync.
void Added(const std::string& rel) {
  const struct fuse_context* caller = fuse_get_context();
  if (caller != nullptr) ::fchownat(g.root, rel.c_str(), caller->uid, caller->gid, AT_SYMLINK_NOFOLLOW);
  struct stat st {};
  if (!Lstat(rel, st)) return;
  g.meta.emplace(st.st_ino, MetaOf(st));
  if (S_ISLNK(st.st_mode)) {
    char buf[4096];
    ssize_t n = ::readlinkat(g.root, rel.c_str(), buf, sizeof buf);
    if (n >= 0) g.targets[st.st_ino] = std::string(buf, static_cast<size_t>(n));
  }
  g.pending.push_back({Op::kAdd, InoOf(Parent(rel)), Base(rel), 0, {}, st.st_ino});
}

void Apply(const Op& op) {
  switch (op.kind) {
    case Op::kAdd:
      g.dirs[op.parent1][op.name1] = op.ino;
      break;
    case Op::kRemove:
      g.dirs[op.parent1].erase(op.name1);
      break;
    case Op::kRename:
      g.dirs[op.parent1].erase(op.name1);
      g.dirs[op.parent2][op.name2] = op.ino;
      break;
    case Op::kExchange: {
      auto& a = g.dirs[op.parent1];
      auto& b = g.dirs[op.parent2];
      auto ia = a.find(op.name1), ib = b.find(op.name2);
      ino_t va = ia == a.end() ? 0 : ia->second, vb = ib == b.end() ? 0 : ib->second;
      if (vb) a[op.name1] = vb; else a.erase(op.name1);
      if (va) b[op.name2] = va; else b.erase(op.name2);
      break;
    }
  }
}

bool TwoSided(const Op& op) { return op.kind == Op::kRename || op.kind == Op::kExchange; }

// Whether `a` and `b` change the same name of the same directory: then
// `a`, the earlier, goes to the disk with `b` (a name the disk gets moved
// or removed was first made there, as every filesystem orders them).
bool SameName(const Op& a, const Op& b) {
  auto names = [](const Op& op) {
    std::vector<std::pair<ino_t, std::string>> out{{op.parent1, op.name1}};
    if (TwoSided(op)) out.push_back({op.parent2, op.name2});
    return out;
  };
  for (const auto& x : names(a))
    for (const auto& y : names(b))
      if (x == y) return true;
  return false;
}

// fsync of a directory: the changes of its names become durable, in order,
// with the earlier changes of the same names they build on.
void SyncDirectory(ino_t dir) {
  std::vector<bool> durable(g.pending.size(), false);
  for (size_t i = g.pending.size(); i-- > 0;) {
    const Op& op = g.pending[i];
    if (op.parent1 == dir || (TwoSided(op) && op.parent2 == dir)) durable[i] = true;
    if (!durable[i]) continue;
    for (size_t j = 0; j < i; ++j)
      if (SameName(g.pending[j], op)) durable[j] = true;
  }
  std::vector<Op> left;
  for (size_t i = 0; i < g.pending.size(); ++i) {
    if (durable[i]) {
      Apply(g.pending[i]);
    } else {
      left.push_back(g.pending[i]);
    }
  }
  g.pending = std::move(left);
}

// The live tree below `rel` as it is now, all of it durable.
void Capture(const std::string& rel, ino_t ino) {
  int fd = ::openat(g.root, rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  std::map<std::string, ino_t> entries;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string child = rel == "." ? name : rel + "/" + name;
    struct stat st {};
    if (!Lstat(child, st)) continue;
    entries[name] = st.st_ino;
    g.meta[st.st_ino] = MetaOf(st);
    if (S_ISDIR(st.st_mode)) {
      Capture(child, st.st_ino);
    } else if (S_ISREG(st.st_mode)) {
      int f = ::openat(g.root, child.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      if (f >= 0) {
        g.data[st.st_ino] = ReadAll(f);
        ::close(f);
      }
    } else if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t n = ::readlinkat(g.root, child.c_str(), buf, sizeof buf);
      if (n >= 0) g.targets[st.st_ino] = std::string(buf, static_cast<size_t>(n));
    }
  }
  ::closedir(d);
  g.dirs[ino] = std::move(entries);
}

void SyncAll() {
  Trace("syncfs", "");
  g.pending.clear();
  g.dirs.clear();
  Capture(".", g.root_ino);
}

// What the disk holds after the power loss, written over the backing
// directory: every entry of it removed, then the durable tree made.
int RemoveBelow(int dirfd) {
  DIR* d = ::fdopendir(::dup(dirfd));
  if (d == nullptr) return -1;
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  for (const auto& name : names) {
    if (::unlinkat(dirfd, name.c_str(), 0) == 0) continue;
    int sub = ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) return -1;
    RemoveBelow(sub);
    ::close(sub);
    if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) < 0) return -1;
  }
  return 0;
}

struct Made {
  std::map<ino_t, std::string> first;  // inode -> the path it was made at (hard links)
  std::set<ino_t> dirs;                // against a directory reached twice
  size_t files = 0, bytes = 0, lost_data = 0;
};

void SetMeta(const std::string& rel, const Meta& m) {
  ::fchownat(g.root, rel.c_str(), m.uid, m.gid, AT_SYMLINK_NOFOLLOW);
  if (!S_ISLNK(m.mode)) ::fchmodat(g.root, rel.c_str(), m.mode & 07777, 0);
  struct timespec times[2] = {m.mtime, m.mtime};
  ::utimensat(g.root, rel.c_str(), times, AT_SYMLINK_NOFOLLOW);
}

void Make(const std::string& rel, ino_t dir, Made& made) {
  for (const auto& [name, ino] : g.dirs[dir]) {
    const std::string child = rel == "." ? name : rel + "/" + name;
    const Meta m = g.meta.count(ino) ? g.meta[ino] : Meta{S_IFREG | 0644};
    if (!S_ISDIR(m.mode) && made.first.count(ino)) {
      ::linkat(g.root, made.first[ino].c_str(), g.root, child.c_str(), 0);
      continue;
    }
    made.first[ino] = child;
    if (S_ISDIR(m.mode)) {
      if (!made.dirs.insert(ino).second) continue;
      ::mkdirat(g.root, child.c_str(), 0700);
      Make(child, ino, made);
    } else if (S_ISLNK(m.mode)) {
      ::symlinkat(g.targets[ino].c_str(), g.root, child.c_str());
    } else if (S_ISREG(m.mode)) {
      int fd = ::openat(g.root, child.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      auto it = g.data.find(ino);
      if (it == g.data.end()) ++made.lost_data;
      if (fd >= 0 && it != g.data.end()) {
        (void)!::write(fd, it->second.data(), it->second.size());
        made.bytes += it->second.size();
      }
      if (fd >= 0) ::close(fd);
      ++made.files;
    } else {
      ::mknodat(g.root, child.c_str(), m.mode, m.rdev);
    }
    SetMeta(child, m);
  }
}

// --- the filesystem -------------------------------------------------------

int Err(int r) { return r < 0 ? -errno : r; }

void* Init(struct fuse_conn_info*, struct fuse_config* cfg) {
  cfg->use_ino = 1;
  cfg->readdir_ino = 1;
  cfg->nullpath_ok = 1;
  cfg->hard_remove = 1;
  cfg->entry_timeout = 0;
  cfg->attr_timeout = 0;
  cfg->negative_timeout = 0;
  if (const char* fd = std::getenv("POWERFS_READY_FD")) {
    (void)!::write(std::atoi(fd), "ready\n", 6);
    ::close(std::atoi(fd));
  }
  return nullptr;
}

int GetAttr(const char* path, struct stat* st, struct fuse_file_info* fi) {
  if (fi != nullptr) return Err(::fstat(static_cast<int>(fi->fh), st));
  std::string rel = Rel(path);
  if (Base(rel) == kSyncfsName) {
    SyncAll();
    return -ENOENT;
  }
  return Err(::fstatat(g.root, rel.c_str(), st, AT_SYMLINK_NOFOLLOW));
}

int ReadLink(const char* path, char* buf, size_t size) {
  ssize_t n = ::readlinkat(g.root, Rel(path).c_str(), buf, size - 1);
  if (n < 0) return -errno;
  buf[n] = '\0';
  return 0;
}

int MkNod(const char* path, mode_t mode, dev_t rdev) {
  std::string rel = Rel(path);
  Trace("mknod", rel);
  if (::mknodat(g.root, rel.c_str(), mode, rdev) < 0) return -errno;
  Added(rel);
  return 0;
}

int MkDir(const char* path, mode_t mode) {
  std::string rel = Rel(path);
  Trace("mkdir", rel);
  if (::mkdirat(g.root, rel.c_str(), mode) < 0) return -errno;
  Added(rel);
  return 0;
}

int Remove(const char* path, int flags) {
  std::string rel = Rel(path);
  Trace("remove", rel);
  ino_t parent = InoOf(Parent(rel));
  if (::unlinkat(g.root, rel.c_str(), flags) < 0) return -errno;
  g.pending.push_back({Op::kRemove, parent, Base(rel), 0, {}, 0});
  return 0;
}

int Unlink(const char* path) { return Remove(path, 0); }
int RmDir(const char* path) { return Remove(path, AT_REMOVEDIR); }

int Symlink(const char* target, const char* path) {
  std::string rel = Rel(path);
  Trace("symlink", rel);
  if (::symlinkat(target, g.root, rel.c_str()) < 0) return -errno;
  Added(rel);
  return 0;
}

int Rename(const char* from, const char* to, unsigned int flags) {
  std::string a = Rel(from), b = Rel(to);
  Trace(flags & RENAME_EXCHANGE ? "exchange" : "rename", a, b);
  ino_t pa = InoOf(Parent(a)), pb = InoOf(Parent(b)), moved = InoOf(a);
  if (::renameat2(g.root, a.c_str(), g.root, b.c_str(), flags) < 0) return -errno;
  if (flags & RENAME_EXCHANGE) {
    g.pending.push_back({Op::kExchange, pa, Base(a), pb, Base(b), 0});
  } else {
    g.pending.push_back({Op::kRename, pa, Base(a), pb, Base(b), moved});
  }
  return 0;
}

int Link(const char* from, const char* to) {
  std::string b = Rel(to);
  Trace("link", b);
  if (::linkat(g.root, Rel(from).c_str(), g.root, b.c_str(), 0) < 0) return -errno;
  g.pending.push_back({Op::kAdd, InoOf(Parent(b)), Base(b), 0, {}, InoOf(b)});
  return 0;
}

int ChMod(const char* path, mode_t mode, struct fuse_file_info* fi) {
  if (fi != nullptr) return Err(::fchmod(static_cast<int>(fi->fh), mode));
  return Err(::fchmodat(g.root, Rel(path).c_str(), mode, 0));
}

int ChOwn(const char* path, uid_t uid, gid_t gid, struct fuse_file_info* fi) {
  if (fi != nullptr) return Err(::fchown(static_cast<int>(fi->fh), uid, gid));
  return Err(::fchownat(g.root, Rel(path).c_str(), uid, gid, AT_SYMLINK_NOFOLLOW));
}

int Truncate(const char* path, off_t size, struct fuse_file_info* fi) {
  if (fi != nullptr) return Err(::ftruncate(static_cast<int>(fi->fh), size));
  int fd = ::openat(g.root, Rel(path).c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -errno;
  int r = Err(::ftruncate(fd, size));
  ::close(fd);
  return r;
}

int UTimens(const char* path, const struct timespec tv[2], struct fuse_file_info* fi) {
  if (fi != nullptr) return Err(::futimens(static_cast<int>(fi->fh), tv));
  return Err(::utimensat(g.root, Rel(path).c_str(), tv, AT_SYMLINK_NOFOLLOW));
}

int Open(const char* path, struct fuse_file_info* fi) {
  int fd = ::openat(g.root, Rel(path).c_str(), (fi->flags & ~O_CREAT) | O_CLOEXEC);
  if (fd < 0) return -errno;
  fi->fh = static_cast<uint64_t>(fd);
  return 0;
}

int Create(const char* path, mode_t mode, struct fuse_file_info* fi) {
  std::string rel = Rel(path);
  bool existed = InoOf(rel) != 0;
  int fd = ::openat(g.root, rel.c_str(), fi->flags | O_CREAT | O_CLOEXEC, mode);
  if (fd < 0) return -errno;
  fi->fh = static_cast<uint64_t>(fd);
  if (!existed) Added(rel);
  if (!existed) Trace("create", rel);
  return 0;
}

int Read(const char*, char* buf, size_t size, off_t off, struct fuse_file_info* fi) {
  ssize_t n = ::pread(static_cast<int>(fi->fh), buf, size, off);
  return n < 0 ? -errno : static_cast<int>(n);
}

int Write(const char*, const char* buf, size_t size, off_t off, struct fuse_file_info* fi) {
  ssize_t n = ::pwrite(static_cast<int>(fi->fh), buf, size, off);
  return n < 0 ? -errno : static_cast<int>(n);
}

int StatFs(const char*, struct statvfs* st) { return Err(::fstatvfs(g.root, st)); }

int Release(const char*, struct fuse_file_info* fi) {
  ::close(static_cast<int>(fi->fh));
  return 0;
}

// fsync of a file: its bytes and metadata as they are now.
int FSync(const char*, int, struct fuse_file_info* fi) {
  int fd = static_cast<int>(fi->fh);
  struct stat st {};
  if (::fstat(fd, &st) < 0) return -errno;
  // The file may be open for writing only: read it through a new open.
  int in = ::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return -errno;
  g.data[st.st_ino] = ReadAll(in);
  ::close(in);
  g.meta[st.st_ino] = MetaOf(st);
  Trace("fsync", std::to_string(st.st_ino));
  return 0;
}

int OpenDir(const char* path, struct fuse_file_info* fi) {
  int fd = ::openat(g.root, Rel(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  fi->fh = static_cast<uint64_t>(fd);
  return 0;
}

int ReadDir(const char*, void* buf, fuse_fill_dir_t fill, off_t, struct fuse_file_info* fi,
            enum fuse_readdir_flags) {
  DIR* d = ::fdopendir(::openat(static_cast<int>(fi->fh), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d == nullptr) return -errno;
  while (struct dirent* e = ::readdir(d)) {
    struct stat st {};
    st.st_ino = e->d_ino;
    st.st_mode = static_cast<mode_t>(DTTOIF(e->d_type));
    if (fill(buf, e->d_name, &st, 0, static_cast<enum fuse_fill_dir_flags>(0))) break;
  }
  ::closedir(d);
  return 0;
}

int ReleaseDir(const char*, struct fuse_file_info* fi) {
  ::close(static_cast<int>(fi->fh));
  return 0;
}

// fsync of a directory: the changes of its names, and its own metadata.
int FSyncDir(const char*, int, struct fuse_file_info* fi) {
  struct stat st {};
  if (::fstat(static_cast<int>(fi->fh), &st) < 0) return -errno;
  SyncDirectory(st.st_ino);
  g.meta[st.st_ino] = MetaOf(st);
  Trace("fsyncdir", std::to_string(st.st_ino));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: powerfs BACKING MOUNTPOINT\n");
    return 2;
  }
  g.root = ::open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat root {};
  if (g.root < 0 || ::fstat(g.root, &root) < 0) {
    std::perror(argv[1]);
    return 1;
  }
  g.root_ino = root.st_ino;
  if (const char* trace = std::getenv("POWERFS_TRACE")) g_trace = std::fopen(trace, "a");
  SyncAll();  // what the backing directory holds is on the disk

  struct fuse_operations ops {};
  ops.init = Init;
  ops.getattr = GetAttr;
  ops.readlink = ReadLink;
  ops.mknod = MkNod;
  ops.mkdir = MkDir;
  ops.unlink = Unlink;
  ops.rmdir = RmDir;
  ops.symlink = Symlink;
  ops.rename = Rename;
  ops.link = Link;
  ops.chmod = ChMod;
  ops.chown = ChOwn;
  ops.truncate = Truncate;
  ops.utimens = UTimens;
  ops.open = Open;
  ops.create = Create;
  ops.read = Read;
  ops.write = Write;
  ops.statfs = StatFs;
  ops.release = Release;
  ops.fsync = FSync;
  ops.opendir = OpenDir;
  ops.readdir = ReadDir;
  ops.releasedir = ReleaseDir;
  ops.fsyncdir = FSyncDir;
  char* fuse_argv[] = {argv[0], argv[2], const_cast<char*>("-f"), const_cast<char*>("-s"),
                       const_cast<char*>("-o"),
                       const_cast<char*>("allow_other,default_permissions,fsname=powerfs,subtype=powerfs"),
                       nullptr};
  // Its status only tells how the kernel ended the connection (an unmount
  // may abort it): the power loss below is what counts.
  int served = fuse_main(6, fuse_argv, &ops, nullptr);

  // The power loss: the backing directory becomes what was durable.
  Made made;
  if (RemoveBelow(g.root) < 0) {
    std::perror("powerfs: clear the backing directory");
    return 1;
  }
  Make(".", g.root_ino, made);
  std::fprintf(stderr,
               "powerfs: power lost; kept %zu files (%zu bytes), %zu of them without their data; %zu changes "
               "of names were not durable (served until the unmount: status %d)\n",
               made.files, made.bytes, made.lost_data, g.pending.size(), served);
  return 0;
}
