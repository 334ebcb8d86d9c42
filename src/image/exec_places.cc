#include "image/exec_places.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <unistd.h>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <algorithm>

#include "base/sys.h"

namespace agent_init {
namespace {

// Where a place is inside its filesystem: the mount's root plus the path
// below the mount point. Two bind mounts of one volume show the same
// filesystem paths under different mount points.
std::string FilesystemPath(const Place& p) {
  std::string below =
      p.real_path.substr(std::min(p.real_path.size(), p.mount.target == "/" ? 0 : p.mount.target.size()));
  return NormalizePath(p.mount.root + "/" + below);
}

// A place is on the volume when it is the volume's mount, or lies inside the
// volume's directory on the same filesystem (another bind mount of it).
bool OnVolume(Place& p, Place& state, const MountTableSource& table) {
  if (p.mount_id == state.mount_id) return true;
  if (p.dev != state.dev) return false;
  // One filesystem, two mounts: the mount table says which directories.
  const MountTable* t = (p.found_mount && state.found_mount) || !table ? nullptr : table();
  if (t != nullptr) {
    AttachMount(p, *t);
    AttachMount(state, *t);
  }
  if (!p.found_mount || !state.found_mount) return false;
  return PathWithin(FilesystemPath(p), FilesystemPath(state));
}

// A place the agent may execute from: the directory `dir` itself, or `rel`
// under it; an fd is opened for it only by the first call that needs one.
struct Where {
  const char* role;
  const Dir* dir;
  const char* rel = "";
  UniqueFd opened{};

  std::string Shown() const { return *rel == '\0' ? dir->path() : dir->PathOf(rel); }
  int Fd() {
    if (*rel == '\0') return dir->fd();
    if (!opened.valid()) opened.reset(::openat(dir->fd(), rel, O_PATH | O_DIRECTORY | O_CLOEXEC));
    return opened.get();
  }
};

// One statx by name: a directory (symlinks followed, as the agent follows
// them), its device and mount.
std::optional<Place> Locate(const Where& where, std::uint64_t root_mount_id) {
  struct statx st;
  if (sys::Statx(where.dir->fd(), where.rel, *where.rel == '\0' ? AT_EMPTY_PATH : 0, &st) < 0 ||
      !S_ISDIR(st.stx_mode))
    return std::nullopt;
  Place p;
  p.role = where.role;
  p.path = where.Shown();
  p.dev = makedev(st.stx_dev_major, st.stx_dev_minor);
  p.mount_id = sys::HasMountId(st) ? st.stx_mnt_id : 0;
  p.on_root = p.mount_id != 0 && p.mount_id == root_mount_id;
  return p;
}

}  // namespace

void AttachMount(Place& p, const MountTable& table) {
  if (p.found_mount) return;
  const Mount* m = p.mount_id != 0 ? table.ById(p.mount_id) : table.Covering(p.real_path);
  if (m == nullptr) return;
  p.found_mount = true;
  p.mount = *m;
  if (p.mount_id == 0) p.mount_id = m->id;  // kernels before 5.8: no statx mount id
}

PlacesReport CheckPlaces(const Dir& data, const Dir& vh, const Dir& state, const MountTableSource& table,
                         bool links_exec_dirs, PlaceFacts facts) {
  PlacesReport report;
  struct statx root;
  std::uint64_t root_id =
      sys::Statx(AT_FDCWD, "/", 0, &root) == 0 && sys::HasMountId(root) ? root.stx_mnt_id : 0;
  Where candidates[] = {
      {"state", &state},           {"versioned_home", &vh},         {"components", &vh, "components"},
      {"install", &vh, "install"}, {"downloads", &vh, "downloads"}, {"tmp", &data, "tmp"}};
  Where* where[std::size(candidates)];  // of each place found
  for (Where& c : candidates) {
    auto p = Locate(c, root_id);
    if (!p) continue;
    where[report.places.size()] = &c;
    report.places.push_back(std::move(*p));
  }
  // The facts that take an fd. A mount's flags (noexec, nosuid) are every
  // place's on it: one statvfs per mount. The rules read the volume's SELinux
  // label only (a report shows every label), and real paths only where the
  // mount table must tell two mounts of the volume's filesystem apart, or
  // stands in for the mount ids of an older kernel.
  std::vector<Place>& places = report.places;
  const bool has_state = !places.empty() && places.front().role == "state";
  for (size_t i = 0; i < places.size(); ++i) {
    Place& p = places[i];
    size_t same = 0;
    while (same < i && (p.mount_id == 0 || places[same].mount_id != p.mount_id)) ++same;
    struct statvfs vfs;
    if (same < i) {
      p.noexec = places[same].noexec;
      p.nosuid = places[same].nosuid;
    } else if (::fstatvfs(where[i]->Fd(), &vfs) == 0) {
      p.noexec = (vfs.f_flag & ST_NOEXEC) != 0;
      p.nosuid = (vfs.f_flag & ST_NOSUID) != 0;
    }
    if (facts == PlaceFacts::kForReport || (has_state && i == 0)) {
      char label[256];
      // An O_PATH fd takes no xattr calls; its /proc/self/fd link does.
      ssize_t got =
          ::getxattr(sys::ProcFdPath(where[i]->Fd()).c_str(), "security.selinux", label, sizeof label - 1);
      if (got > 0) p.selinux = std::string(label, strnlen(label, static_cast<size_t>(got)));
    }
  }
  bool state_real = false;
  for (size_t i = places.size(); i-- > 0;) {
    Place& p = places[i];
    bool shares_device = has_state && i > 0 && p.dev == places[0].dev && p.mount_id != places[0].mount_id;
    state_real = state_real || shares_device;
    bool needed = p.mount_id == 0 || shares_device || (i == 0 && state_real);
    std::string real = needed ? sys::RealPathOf(where[i]->Fd()) : "";
    p.real_path = real.empty() ? p.path : std::move(real);  // not read: no rule looks at it
  }
  // Without statx mount ids every place needs the table.
  if (root_id == 0 && table) {
    if (const MountTable* t = table()) {
      for (auto& p : report.places) AttachMount(p, *t);
      for (auto& p : report.places) p.on_root = p.found_mount && p.mount.target == "/";
    }
  }
  EvaluatePlaces(report, table);
  ApplyExdevRule(report, links_exec_dirs);
  return report;
}

void ApplyExdevRule(PlacesReport& report, bool links_exec_dirs) {
  if (!report.exdev) return;
  if (links_exec_dirs) {
    report.problems.push_back(std::move(*report.exdev));
  } else {
    report.warnings.push_back(std::move(report.exdev->message));
  }
  report.exdev.reset();
}

void EvaluatePlaces(PlacesReport& report, const MountTableSource& table) {
  Place* state = nullptr;
  const Place* tmp = nullptr;
  const Place* install = nullptr;
  const Place* vh = nullptr;
  for (auto& p : report.places) {
    if (p.role == "state") state = &p;
    if (p.role == "tmp") tmp = &p;
    if (p.role == "install") install = &p;
    if (p.role == "versioned_home") vh = &p;
  }
  // STATE on the container's root filesystem means no volume is mounted: the
  // state would die with the container. Everything else then shares that
  // mount by necessity, which is not the problem to report.
  if (state != nullptr && (state->on_root || (state->found_mount && state->mount.target == "/"))) {
    report.warnings.push_back(Q(state->path) +
                              " is not on a volume (it is on the root filesystem): the agent's state will "
                              "not outlive the container; mount the persistent volume there");
    state = nullptr;
  }
  if (state != nullptr && !state->selinux.empty() &&
      state->selinux.find("container_file_t") == std::string::npos &&
      state->selinux.find("svirt_sandbox_file_t") == std::string::npos) {
    report.warnings.push_back(
        Q(state->path) + " carries the SELinux label " + Q(state->selinux) +
        ": where SELinux is enforcing, a container writes only what is labelled for "
        "containers (container_file_t); mount it with `:z` (Docker, Podman) or relabel the "
        "node directory");
  }
  for (auto& p : report.places) {
    if (p.role == "state") continue;
    if (p.nosuid) {
      report.warnings.push_back(Q(p.path) +
                                " is on a nosuid mount: setuid bits and file capabilities of what the "
                                "agent runs there are ignored (the agent's binary has file "
                                "capabilities from 8.16)");
    }
    if (state != nullptr && OnVolume(p, *state, table)) {
      report.problems.push_back(
          {"exec-on-volume", p.path,
           Q(p.path) + " is on the state volume " + Q(state->path) +
               ": the agent would execute programs from the volume and keep stale ones across images; "
               "mount the volume at STATE only (not over data/), and let agent-init put STATE/run in place"});
      continue;
    }
    if (p.noexec || (p.found_mount && p.mount.noexec)) {
      if (!p.found_mount && table) {
        if (const MountTable* t = table()) AttachMount(p, *t);  // to name the mount in the message
      }
      std::string where = p.found_mount ? " (" + Q(p.mount.target) + ", " + p.mount.fstype + ")" : "";
      report.problems.push_back(
          {"noexec", p.path,
           Q(p.path) + " is on a noexec mount" + where +
               ": the agent cannot execute what it installs there; do not mount a volume over the "
               "agent's data directory, or mount it with exec"});
    }
  }
  // Renames from data/tmp into the install directory (7.x) or into data/ (upgrades).
  const Place* target = install != nullptr ? install : vh;
  if (tmp != nullptr && target != nullptr && tmp->mount_id != target->mount_id) {
    report.exdev = Problem{"exdev", tmp->path,
                           Q(tmp->path) + " and " + Q(target->path) + " are on different mounts (ids " +
                               std::to_string(tmp->mount_id) + " and " + std::to_string(target->mount_id) +
                               "): the agent's renames between them will fail with EXDEV"};
  }
}

}  // namespace agent_init
