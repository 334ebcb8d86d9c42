#include "volume/config_home.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "base/atomic_file.h"
#include "base/log.h"
#include "base/sys.h"
#include "base/tree.h"
#include "volume/carry.h"
#include "volume/names.h"

namespace agent_init {
namespace {

// A mount point: the kernel says so (Linux 5.8), or the entry is on another
// mount than HOME.
bool IsMountRoot(const struct statx& st, const struct statx& home) {
  if (st.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) return (st.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  return !sys::SameMount(st, home);
}

Result<struct statx> StatEntry(const Dir& dir, const std::string& name) {
  struct statx st {};
  if (sys::Statx(dir.fd(), name.c_str(), AT_SYMLINK_NOFOLLOW, &st) < 0)
    return SysFail(errno, "stat " + Q(dir.PathOf(name)));
  return st;
}

// STATE/home, made (the first time) with HOME's mode and owner: it becomes
// HOME, and the agent's user must be able to write it as it wrote HOME.
Result<Dir> MakeHomeDir(const Volume& volume, const struct statx& home) {
  if (::mkdirat(volume.dir().fd(), names::kHome, 0700) == 0) {
    auto made = volume.dir().OpenSub(names::kHome);
    if (!made) return made;
    ::fchown(made->fd(), home.stx_uid, home.stx_gid);
    if (::fchmod(made->fd(), home.stx_mode & 07777) < 0) return SysFail(errno, "chmod " + Q(made->path()));
    if (auto synced = SyncDir(volume.dir()); !synced) return std::unexpected(synced.error());
    return made;
  }
  if (errno != EEXIST) return SysFail(errno, "create " + Q(volume.dir().PathOf(names::kHome)));
  return volume.dir().OpenSub(names::kHome);
}

// A mount point for `name` of HOME in STATE/home: a directory, or an empty
// file for a file mounted there. Whatever else is in the way goes (it is the
// image's name: an older image's copy).
Result<void> MakeMountPoint(const Dir& dir, const std::string& name, const struct statx& like) {
  const bool is_dir = S_ISDIR(like.stx_mode);
  auto st = dir.Stat(name);
  if (!st) return std::unexpected(st.error());
  if (*st) {
    if (is_dir ? S_ISDIR((*st)->stx_mode) : S_ISREG((*st)->stx_mode)) return {};
    if (auto removed = RemoveEntry(dir, name); !removed) return removed;
  }
  if (is_dir) {
    if (::mkdirat(dir.fd(), name.c_str(), 0755) < 0) return SysFail(errno, "create " + Q(dir.PathOf(name)));
    return {};
  }
  auto made = dir.OpenFile(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (!made) return std::unexpected(made.error());
  return {};
}

bool SameTimes(const struct statx& a, const struct statx& b) {
  return a.stx_mtime.tv_sec == b.stx_mtime.tv_sec && a.stx_mtime.tv_nsec == b.stx_mtime.tv_nsec;
}

// The copy of the image's `name` in STATE/home, made or replaced when it
// differs (files by size and time, which a copy keeps; symlinks by target).
Result<bool> RefreshCopy(const Dir& home, const std::string& name, const struct statx& st, const Dir& dir) {
  auto have = dir.Stat(name);
  if (!have) return std::unexpected(have.error());
  if (*have && ((*have)->stx_mode & S_IFMT) == (st.stx_mode & S_IFMT)) {
    if (S_ISLNK(st.stx_mode) && dir.ReadLink(name) == home.ReadLink(name)) return false;
    if (S_ISREG(st.stx_mode) && (*have)->stx_size == st.stx_size && SameTimes(**have, st)) return false;
  }
  const std::string tmp = "." + name + ".agent-init";
  if (auto cleared = RemoveEntry(dir, tmp); !cleared) return std::unexpected(cleared.error());
  if (auto copied = CopyEntry(home, name, dir, tmp, nullptr, CopyFrom::kImage); !copied) return std::unexpected(copied.error());
  if (*have && S_ISDIR((*have)->stx_mode)) {
    if (auto removed = RemoveEntry(dir, name); !removed) return std::unexpected(removed.error());
  }
  if (::renameat(dir.fd(), tmp.c_str(), dir.fd(), name.c_str()) < 0)
    return SysFail(errno, "replace " + Q(dir.PathOf(name)));
  return true;
}

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl != 0) out.emplace_back(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  }
  return out;
}

}  // namespace

Result<bool> ConfigHomeInPlace(const Dir& home, const Volume& volume) {
  auto here = home.StatSelf();
  if (!here) return std::unexpected(here.error());
  auto kept = volume.dir().Stat(names::kHome);
  if (!kept) return std::unexpected(kept.error());
  return *kept && SameInode(*here, **kept);
}

Result<ConfigHome> PrepareConfigHome(const Dir& home, Volume& volume, const std::vector<const AgentFile*>& files) {
  ConfigHome out;
  auto in_place = ConfigHomeInPlace(home, volume);
  if (!in_place) return std::unexpected(in_place.error());
  if (*in_place) {
    out.in_place = true;
    return out;
  }
  auto home_st = home.StatSelf();
  if (!home_st) return std::unexpected(home_st.error());
  auto dir = MakeHomeDir(volume, *home_st);
  if (!dir) return std::unexpected(dir.error());
  out.dir = std::move(*dir);
  auto carried = CarryAgentFiles(volume, home, std::nullopt, names::kHome, files, /*move=*/false);
  if (!carried) return std::unexpected(carried.error());

  std::set<std::string> agents;
  for (const AgentFile* f : files) agents.emplace(f->name);
  auto entries = home.List();
  if (!entries) return std::unexpected(entries.error());
  std::vector<std::string> copied;
  for (const auto& e : *entries) {
    auto st = StatEntry(home, e.name);
    if (!st) return std::unexpected(st.error());
    if (agents.count(e.name) != 0) {
      // The agent's own: the volume's copy is the agent's, except an
      // elastic-agent.yml that enrolment did not write, which follows the image.
      auto ours = out.dir.ReadSmallFile(e.name);
      bool follows_image = S_ISREG(st->stx_mode) && ours && (!*ours || !IsEnrolledConfig(**ours)) &&
                           std::any_of(files.begin(), files.end(), [&](const AgentFile* f) {
                             return f->name == e.name && f->role == FileRole::kEnrolment;
                           });
      if (follows_image) {
        auto refreshed = RefreshCopy(home, e.name, *st, out.dir);
        if (!refreshed) return std::unexpected(refreshed.error());
      }
      continue;
    }
    if (S_ISDIR(st->stx_mode) || IsMountRoot(*st, *home_st)) {
      if (auto made = MakeMountPoint(out.dir, e.name, *st); !made) return std::unexpected(made.error());
      out.attach.push_back(e.name);
      continue;
    }
    auto refreshed = RefreshCopy(home, e.name, *st, out.dir);
    if (!refreshed) return std::unexpected(refreshed.error());
    copied.push_back(e.name);
  }
  // What an older image had and this one has not goes.
  auto record = volume.bookkeeping().ReadSmallFile(names::kHomeFiles);
  if (!record) return std::unexpected(record.error());
  for (const auto& name : Lines(record->value_or(""))) {
    bool still = std::find(copied.begin(), copied.end(), name) != copied.end() ||
                 std::find(out.attach.begin(), out.attach.end(), name) != out.attach.end() || agents.count(name);
    if (!still && IsPlainName(name)) {
      if (auto removed = RemoveEntry(out.dir, name); !removed) return std::unexpected(removed.error());
    }
  }
  std::string listed;
  for (const auto& name : copied) listed += name + "\n";
  if (!record->has_value() || **record != listed) {
    if (auto w = WriteFileAtomic(volume.bookkeeping(), names::kHomeFiles, listed); !w)
      return std::unexpected(w.error());
  }
  return out;
}

Result<void> MountConfigHome(const Dir& home, const ConfigHome& config_home, Privileged& ops) {
  if (config_home.in_place) return {};
  // The image's entries, opened before HOME is covered: a bind of these fds
  // attaches what they are, wherever the path now leads.
  std::vector<UniqueFd> sources;
  for (const auto& name : config_home.attach) {
    int fd = ::openat(home.fd(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return SysFail(errno, "open " + Q(home.PathOf(name)));
    sources.emplace_back(fd);
  }
  int new_api_err = 0;
  if (BindFds(ops, config_home.dir.fd(), home.fd(), BindDepth::kOne, new_api_err) < 0) {
    int err = errno;
    Error e = MakeError(Kind::kCannotPlace, err,
                        "bind-mount " + Q(config_home.dir.path()) + " on the agent's home " + Q(home.path()));
    if (new_api_err != 0) e.msg += std::string(" (open_tree, move_mount: ") + std::strerror(new_api_err) + ")";
    return std::unexpected(e);
  }
  auto covered = Dir::OpenTrusted(home.path(), Kind::kCannotPlace);
  if (!covered) return std::unexpected(covered.error());
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string& name = config_home.attach[i];
    int target = ::openat(covered->fd(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    if (target >= 0) {
      UniqueFd target_fd(target);
      if (BindFds(ops, sources[i].get(), target_fd.get(), BindDepth::kTree, new_api_err) == 0) continue;
      err = errno;
    }
    // Half a home is worse than none: the agent would find no data/.
    ops.Detach(covered->fd());
    return std::unexpected(
        MakeError(Kind::kCannotPlace, err, "attach the image's " + Q(home.PathOf(name)) + " to the agent's home again"));
  }
  log::Info("the agent's home is on the volume",
            {{"home", home.path()}, {"volume", config_home.dir.path()},
             {"attached", std::to_string(config_home.attach.size())}});
  return {};
}

}  // namespace agent_init
