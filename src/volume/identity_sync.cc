#include "volume/identity_sync.h"

#include <fcntl.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "base/sys.h"
#include "base/tree.h"
#include "volume/carry.h"

namespace agent_init {
namespace {

constexpr uint32_t kPlaceMask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_ONLYDIR;
constexpr uint32_t kDirFileMask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ONLYDIR;

// Directories first: vault/ is in place before the fleet.enc encrypted with
// its key.
std::vector<const AgentFile*> DirectoriesFirst(const std::vector<const AgentFile*>& files) {
  std::vector<const AgentFile*> out;
  for (bool dirs : {true, false}) {
    for (const AgentFile* f : files) {
      if ((f->shape == FileShape::kDirectory) == dirs) out.push_back(f);
    }
  }
  return out;
}

// Whether `dir`'s `f` is one to keep: everything but an elastic-agent.yml
// that enrolment did not write (that one follows the image).
bool Keepable(const Dir& dir, const AgentFile& f) {
  if (f.role != FileRole::kEnrolment) return true;
  auto text = dir.ReadSmallFile(f.name);
  return text && *text && IsEnrolledConfig(**text);
}

// `name` of `from` put over `name` of `to`: a copy beside it, synced when
// `durable`, then renamed over it (a directory exchanged with it, and the
// old one removed).
Result<void> Replace(const Dir& from, const std::string& name, const Dir& to, bool durable) {
  const std::string tmp = "." + name + ".agent-init";
  if (auto cleared = RemoveEntry(to, tmp); !cleared) return cleared;
  if (auto copied = CopyEntry(from, name, to, tmp); !copied) return copied;
  if (durable) {
    if (auto synced = SyncFilesystem(to); !synced) return synced;
  }
  auto there = to.Stat(name);
  if (!there) return std::unexpected(there.error());
  if (*there && S_ISDIR((*there)->stx_mode)) {
    if (::renameat2(to.fd(), tmp.c_str(), to.fd(), name.c_str(), RENAME_EXCHANGE) < 0)
      return SysFail(errno, "replace " + Q(to.PathOf(name)));
    if (auto removed = RemoveEntry(to, tmp); !removed) return removed;
  } else if (::renameat(to.fd(), tmp.c_str(), to.fd(), name.c_str()) < 0) {
    return SysFail(errno, "replace " + Q(to.PathOf(name)));
  }
  return durable ? SyncDir(to) : Result<void>{};
}

}  // namespace

Result<void> RestoreAgentFiles(Volume& volume, const Dir& image, const std::string& volume_rel,
                               const std::vector<const AgentFile*>& files) {
  auto carried = CarryAgentFiles(volume, image, std::nullopt, volume_rel, files, /*move=*/false);
  if (!carried) return std::unexpected(carried.error());
  auto opened = volume.dir().OpenSubIfAny(volume_rel);
  if (!opened) return std::unexpected(opened.error());
  if (!*opened) return {};
  const Dir* kept = &**opened;
  std::string restored;
  for (const AgentFile* f : DirectoriesFirst(files)) {
    const std::string name(f->name);
    auto st = kept->Stat(name);
    if (!st) return std::unexpected(st.error());
    if (!*st || !Keepable(*kept, *f) || SameAgentFile(*kept, image, *f)) continue;
    if (auto put = Replace(*kept, name, image, /*durable=*/false); !put) {
      Error e = put.error();
      if (e.err == EROFS) {
        e.hint = "the agent's home is read-only and agent-init may not mount here: the agent could not save "
                 "there either; grant mount permission (CAP_SYS_ADMIN) so that its home is the volume's, or "
                 "give it a writable root filesystem";
      }
      return std::unexpected(Wrap(e, "put the volume's copy of " + Q(image.PathOf(name)) + " in the agent's place"));
    }
    restored += (restored.empty() ? "" : ", ") + name;
  }
  if (!restored.empty()) {
    log::Info("put the agent's files kept on the volume in its place",
              {{"from", kept->path()}, {"to", image.path()}, {"files", restored}});
  }
  return {};
}

Result<std::unique_ptr<AgentFileSync>> AgentFileSync::Start(std::vector<SyncedPlace> places) {
  int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) return SysFail(errno, "inotify_init1");
  std::unique_ptr<AgentFileSync> sync(new AgentFileSync(std::move(places), UniqueFd(fd)));
  for (size_t i = 0; i < sync->places_.size(); ++i) {
    const SyncedPlace& p = sync->places_[i];
    int wd = ::inotify_add_watch(fd, sys::ProcFdPath(p.image.fd()).c_str(), kPlaceMask);
    if (wd < 0) return SysFail(errno, "watch " + Q(p.image.path()));
    sync->watches_.push_back({wd, i, nullptr});
    for (const AgentFile* f : p.files) {
      if (f->shape == FileShape::kDirectory) sync->WatchDirectoryFile(i, f);
    }
  }
  return sync;
}

std::vector<int> AgentFileSync::fds() const {
  std::vector<int> out{inotify_.get()};
  for (const auto& p : places_) {
    out.push_back(p.image.fd());
    out.push_back(p.kept.fd());
  }
  return out;
}

void AgentFileSync::WatchDirectoryFile(size_t place, const AgentFile* f) {
  auto opened = places_[place].image.OpenSubIfAny(f->name);
  if (!opened || !*opened) return;  // not there (yet): its creation is an event of the place
  const Dir* dir = &**opened;
  int wd = ::inotify_add_watch(inotify_.get(), sys::ProcFdPath(dir->fd()).c_str(), kDirFileMask);
  if (wd < 0) {
    log::Warn("cannot watch the agent's directory", {{"path", dir->path()}, {"error", std::strerror(errno)}});
    return;
  }
  auto known = std::find_if(watches_.begin(), watches_.end(), [&](const Watch& w) { return w.wd == wd; });
  if (known == watches_.end()) watches_.push_back({wd, place, f});
}

void AgentFileSync::SyncOne(size_t place, const AgentFile* f) {
  const SyncedPlace& p = places_[place];
  const std::string name(f->name);
  auto st = p.image.Stat(name);
  if (!st || !*st || !Keepable(p.image, *f) || SameAgentFile(p.image, p.kept, *f)) return;
  if (auto copied = Replace(p.image, name, p.kept, /*durable=*/true); !copied) {
    log::Warn("could not copy the agent's save onto the volume",
              {{"path", p.image.PathOf(name)}, {"error", copied.error().msg}});
    return;
  }
  log::Debug("copied the agent's save onto the volume", {{"path", p.image.PathOf(name)}, {"to", p.kept.path()}});
}

void AgentFileSync::OnReadable() {
  alignas(struct inotify_event) char buf[8192];
  for (;;) {
    ssize_t n = ::read(inotify_.get(), buf, sizeof buf);
    if (n <= 0) return;
    for (char* at = buf; at < buf + n;) {
      const auto* ev = reinterpret_cast<const struct inotify_event*>(at);
      at += sizeof(struct inotify_event) + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        SyncAll();
        continue;
      }
      auto w = std::find_if(watches_.begin(), watches_.end(), [&](const Watch& x) { return x.wd == ev->wd; });
      if (w == watches_.end()) continue;
      if (w->dir_file != nullptr) {  // inside vault/: the whole directory goes
        if (!(ev->mask & IN_IGNORED)) SyncOne(w->place, w->dir_file);
        continue;
      }
      const std::string name = ev->len > 0 ? ev->name : "";
      const auto& files = places_[w->place].files;
      auto f = std::find_if(files.begin(), files.end(), [&](const AgentFile* x) { return x->name == name; });
      if (f == files.end()) continue;  // NAME.tmp and everything else of the agent's
      if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
        // The agent removed its state (enrolment removes the action store):
        // so does the volume. Its identity and configuration it only
        // replaces (enrolment renames elastic-agent.yml to a .bak, then
        // writes the new one): the volume's copy stays until the new lands.
        if ((*f)->role != FileRole::kAgentState) continue;
        if (auto removed = RemoveEntry(places_[w->place].kept, name); !removed) {
          log::Warn("could not remove the volume's copy of a file the agent removed",
                    {{"path", places_[w->place].kept.PathOf(name)}, {"error", removed.error().msg}});
        }
        continue;
      }
      if ((*f)->shape == FileShape::kDirectory && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
        WatchDirectoryFile(w->place, *f);
      if ((*f)->shape == FileShape::kFile && (ev->mask & IN_CREATE)) continue;  // written until IN_CLOSE_WRITE
      SyncOne(w->place, *f);
    }
  }
}

void AgentFileSync::SyncAll() {
  for (size_t i = 0; i < places_.size(); ++i) {
    for (const AgentFile* f : DirectoriesFirst(places_[i].files)) SyncOne(i, f);
  }
}

void AgentFileSync::OnCommandExited() { SyncAll(); }

}  // namespace agent_init
