#include "volume/volume.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "base/access.h"
#include "volume/names.h"

namespace agent_init {

Result<Volume> Volume::Open(const std::string& path) {
  auto dir = Dir::OpenTrusted(path, Kind::kCannotPlace);
  if (!dir) {
    Error e = dir.error();
    if (e.err == ENOENT) {
      e.hint = "mount the persistent volume at " + Q(path) +
               " (or set --state / AGENT_INIT_STATE to where it is mounted)";
    }
    return std::unexpected(Wrap(e, "open state volume"));
  }
  return Volume(std::move(*dir));
}

Volume::Volume(Volume&& other) noexcept
    : dir_(std::move(other.dir_)), bookkeeping_(std::move(other.bookkeeping_)), journal_(bookkeeping_) {}

std::string_view Volume::RunRel(Layout layout) {
  return layout == Layout::kState ? names::kDataRun : names::kRun;
}

std::string Volume::RunPathOf(const std::string& state, Layout layout) {
  return NormalizePath(state + "/" + std::string(RunRel(layout)));
}

Result<Dir> Volume::MakeRun(Layout layout) const { return dir_.MakeSub(RunRel(layout), 0770); }

Result<Dir> Volume::OpenRunParent(Layout layout) const {
  return layout == Layout::kState ? dir_.OpenSub(names::kData) : dir_.Dup();
}

Layout Volume::HeldLayout() const {
  auto in_data = dir_.Stat(RunRel(Layout::kState));
  auto in_state = dir_.Stat(RunRel(Layout::kRun));
  return in_data && *in_data && in_state && !*in_state ? Layout::kState : Layout::kRun;
}

Result<Dir> Volume::MakeData() const { return dir_.MakeSub(names::kData, 0770); }

Result<Dir> Volume::OpenData() const { return dir_.OpenSub(names::kData); }

Result<void> Volume::RequireWritable() const {
  struct statvfs vfs;
  if (::fstatvfs(dir_.fd(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) {
    return Fail(Kind::kCannotPlace,
                "the state volume " + Q(path()) +
                    " is mounted read-only: agent-init keeps its lock there and the agent its state",
                "mount the volume read-write (no `:ro` on the volume, no `readOnly: true` on its volumeMount)");
  }
  return {};
}

Result<void> Volume::MakeBookkeeping() {
  if (auto writable = RequireWritable(); !writable) return writable;
  auto dir = dir_.MakeSub(names::kBookkeeping, 0700);
  if (!dir) return std::unexpected(Wrap(ExplainDenial(dir.error(), names::kBookkeeping), "prepare bookkeeping directory"));
  bookkeeping_ = std::move(*dir);
  return {};
}

Result<bool> Volume::OpenBookkeeping() {
  auto dir = dir_.OpenSub(names::kBookkeeping);
  if (!dir) {
    if (dir.error().err == ENOENT) return false;
    return std::unexpected(dir.error());
  }
  bookkeeping_ = std::move(*dir);
  return true;
}

std::string Volume::BookkeepingPath(std::string_view rel) const {
  std::string path = names::kBookkeeping;
  if (!rel.empty()) path += "/" + std::string(rel);
  return dir_.PathOf(path);
}

Error Volume::ExplainDenial(Error e, std::string_view rel) const {
  if (!IsPermissionError(e.err)) return e;
  // The directory that refused: the deepest one of `rel` that exists.
  std::string culprit = path();
  std::string walked;
  size_t start = 0;
  while (start <= rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string_view::npos) end = rel.size();
    std::string next = walked + (walked.empty() ? "" : "/") + std::string(rel.substr(start, end - start));
    struct stat st;
    if (::fstatat(dir_.fd(), next.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) break;
    walked = next;
    culprit = dir_.PathOf(walked);
    start = end + 1;
  }
  const std::string ids = SelfIds();
  e.msg += ": agent-init runs as " + DescribeSelf() + " and " + Q(culprit) + " is " + DescribeOwnership(culprit);
  e.hint = "hand the volume to the agent's user before it starts: an init container that runs `agent-init prepare "
           "--user " + ids + "` as root (docker/kubernetes/daemonset.yaml); or run this container as root "
           "(`--user 0`, runAsUser: 0) and give agent-init `--user " + ids + "`; or chown the node directory to " +
           ids + " (a hostPath that DirectoryOrCreate made is root:root 0755)";
  return e;
}

}  // namespace agent_init
