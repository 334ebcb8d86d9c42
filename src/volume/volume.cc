#include "volume/volume.h"

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

Result<void> Volume::MakeBookkeeping() {
  auto dir = dir_.MakeSub(names::kBookkeeping, 0700);
  if (!dir) return std::unexpected(Wrap(dir.error(), "prepare bookkeeping directory"));
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

}  // namespace agent_init
