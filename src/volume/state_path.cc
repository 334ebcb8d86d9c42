#include "volume/state_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "base/fault.h"
#include "base/log.h"
#include "base/sys.h"
#include "image/image.h"
#include "volume/names.h"
#include "volume/volume.h"

namespace agent_init {

Result<void> CheckStatePathEnvironment(const std::string& state) {
  const char* env = std::getenv("STATE_PATH");
  if (env == nullptr || *env == '\0') return {};
  if (NormalizePath(env) == NormalizePath(state)) return {};
  return Fail(Kind::kLayout,
              "STATE_PATH is " + Q(env) + " but the state volume (--state) is " + Q(state) +
                  ": the agent would keep its state somewhere else than the volume",
              "set --state / AGENT_INIT_STATE to the same directory as STATE_PATH, or unset STATE_PATH and "
              "let agent-init set it");
}

Result<void> RefuseInstalledMarker(const Dir& data) {
  auto st = data.Stat(names::kInstalledMarker);
  if (!st) return std::unexpected(st.error());
  if (!*st) return {};
  return Fail(Kind::kLayout,
              "found " + Q(data.PathOf(names::kInstalledMarker)) +
                  ": it makes a containerised agent believe it may upgrade itself in place",
              "containers are upgraded by changing the image: remove the file");
}

std::vector<ExecLink> ExecLinks(const std::string& home, const std::string& vh_name) {
  const std::string image_data = ImageDataPath(home);
  return {{names::kInstall, image_data + "/" + vh_name + "/" + names::kInstall},
          {names::kTmp, image_data + "/" + names::kTmp}};
}

bool ExecLinksInPlace(const Dir& data, const std::vector<ExecLink>& links) {
  for (const auto& link : links) {
    if (data.ReadLink(link.name) != link.target) return false;
  }
  return true;
}

Result<bool> LinkExecDirs(const Dir& data, const std::vector<ExecLink>& links, const Volume& volume,
                          const std::string& id) {
  bool changed = false;
  for (const auto& link : links) {
    auto st = data.Stat(link.name);
    if (!st) return std::unexpected(st.error());
    if (*st && S_ISLNK((*st)->stx_mode) && data.ReadLink(link.name) == link.target) continue;
    if (*st) {
      bool empty_dir = false;
      if (S_ISDIR((*st)->stx_mode)) {
        empty_dir = ::unlinkat(data.fd(), link.name.c_str(), AT_REMOVEDIR) == 0;
      }
      if (!empty_dir) {
        // Installs the agent made on the volume, or something planted there:
        // kept aside, not deleted.
        auto aside = volume.bookkeeping().MakeSub(std::string(names::kDisplaced) + "/" + id, 0700);
        if (!aside) return std::unexpected(aside.error());
        if (sys::RenameNoReplace(data.fd(), link.name.c_str(), aside->fd(), link.name.c_str()) < 0) {
          return SysFail(errno, "move " + Q(data.PathOf(link.name)) + " to " + Q(aside->path()));
        }
        log::Warn("moved aside what the volume held where agent-init links to the image",
                  {{"path", data.PathOf(link.name)}, {"kept_at", aside->PathOf(link.name)}});
      }
    }
    if (::symlinkat(link.target.c_str(), data.fd(), link.name.c_str()) < 0) {
      return SysFail(errno, "create symlink " + Q(data.PathOf(link.name)) + " -> " + Q(link.target));
    }
    FaultPoint("state link");
    changed = true;
  }
  return changed;
}

}  // namespace agent_init
