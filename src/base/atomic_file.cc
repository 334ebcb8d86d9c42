#include "base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include "base/sys.h"
#include "base/tree.h"

namespace agent_init {

Result<void> WriteFileAtomic(const Dir& dir, const std::string& name, std::string_view content, mode_t mode,
                             Durability durability) {
  const std::string tmp = "." + name + ".tmp";
  // A leftover temp file (or anything planted there) goes first; unlinkat
  // removes a symlink itself, never its target.
  if (::unlinkat(dir.fd(), tmp.c_str(), 0) < 0 && errno != ENOENT) {
    return SysFail(errno, "remove " + Q(dir.PathOf(tmp)));
  }
  auto fd = dir.OpenFile(tmp, O_WRONLY | O_CREAT | O_EXCL, mode);
  if (!fd) return std::unexpected(fd.error());
  while (!content.empty()) {
    ssize_t n = ::write(fd->get(), content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysFail(errno, "write " + Q(dir.PathOf(tmp)));
    }
    content.remove_prefix(static_cast<size_t>(n));
  }
  if (durability != Durability::kNone && sys::Fsync(fd->get()) < 0) {
    return SysFail(errno, "sync " + Q(dir.PathOf(tmp)));
  }
  fd->reset();
  if (::renameat(dir.fd(), tmp.c_str(), dir.fd(), name.c_str()) < 0) {
    return SysFail(errno, "rename " + Q(dir.PathOf(tmp)) + " to " + Q(name));
  }
  return durability == Durability::kNow ? SyncDir(dir) : Result<void>{};
}

Result<void> RemoveFileDurable(const Dir& dir, const std::string& name) {
  if (::unlinkat(dir.fd(), name.c_str(), 0) < 0) {
    if (errno == ENOENT) return {};
    return SysFail(errno, "remove " + Q(dir.PathOf(name)));
  }
  return SyncDir(dir);
}

}  // namespace agent_init
