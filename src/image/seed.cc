#include "image/seed.h"

#include "base/atomic_file.h"
#include "base/log.h"
#include "base/record.h"
#include "base/tree.h"
#include "version.h"

namespace agent_init {
namespace {
constexpr const char* kMarker = ".agent-init-seed";
}  // namespace

Result<bool> SeedData(const Dir& image_data, const Dir& seed, const std::string& versioned_home) {
  auto marker = seed.ReadSmallFile(kMarker, 4096);
  if (marker && *marker) {
    auto r = DecodeRecord(**marker);
    if (r && Lookup(*r, "versioned-home") == versioned_home) {
      log::Debug("the data directory copy is already there", {{"path", seed.path()}});
      return false;
    }
  }
  // A stale or partial copy (another image, or a copy cut short) goes first.
  auto stale = seed.List();
  if (!stale) return std::unexpected(stale.error());
  for (const auto& e : *stale) {
    auto removed = RemoveEntry(seed, e.name);
    if (!removed) return std::unexpected(removed.error());
  }
  auto entries = image_data.List();
  if (!entries) return std::unexpected(entries.error());
  CopyStats stats;
  for (const auto& e : *entries) {
    auto copied = CopyEntry(image_data, e.name, seed, e.name, &stats, CopyFrom::kImage);
    if (!copied) return std::unexpected(Wrap(copied.error(), "seed " + Q(seed.path())));
  }
  auto synced = SyncFilesystem(seed);
  if (!synced) return std::unexpected(synced.error());
  auto written = WriteFileAtomic(
      seed, kMarker, EncodeRecord({{"versioned-home", versioned_home}, {"by", AGENT_INIT_VERSION}}), 0644);
  if (!written) return std::unexpected(written.error());
  log::Info("copied the image's data directory", {{"from", image_data.path()},
                                                  {"to", seed.path()},
                                                  {"files", std::to_string(stats.files)},
                                                  {"bytes", std::to_string(stats.bytes)}});
  return true;
}

}  // namespace agent_init
