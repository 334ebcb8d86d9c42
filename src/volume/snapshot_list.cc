#include "volume/snapshot_list.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>

#include "base/atomic_file.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/record.h"
#include "base/tree.h"
#include "volume/names.h"

namespace agent_init {
namespace {

using names::kSnapshotOrder;
using names::kSnapshots;

struct Recorded {
  std::uint64_t sequence;
  std::int64_t taken;
  std::string name;
};

// snapshots/.order: one `snapshot` line per snapshot, its value
// "<sequence> <taken> <name>". What cannot be read is no order at all (the
// directories' times rank every snapshot, as before it was recorded), with
// a warning: the volume is not trusted.
std::vector<Recorded> ReadOrder(const Dir& snapshots) {
  auto text = snapshots.ReadSmallFile(kSnapshotOrder, 256 * 1024);
  if (!text || !*text) {
    if (!text) log::Warn("cannot read the snapshots' order", {{"error", text.error().msg}});
    return {};
  }
  std::vector<Recorded> out;
  auto record = DecodeRecord(**text);
  for (const auto& [key, value] : record ? *record : Record{}) {
    size_t a = value.find(' '), b = a == std::string::npos ? a : value.find(' ', a + 1);
    Recorded r{};
    if (key != "snapshot" || b == std::string::npos ||
        std::from_chars(value.data(), value.data() + a, r.sequence).ec != std::errc{} ||
        std::from_chars(value.data() + a + 1, value.data() + b, r.taken).ec != std::errc{} ||
        !IsVisibleName(value.substr(b + 1))) {
      record.reset();
      break;
    }
    r.name = value.substr(b + 1);
    out.push_back(std::move(r));
  }
  if (!record) {
    log::Warn("the snapshots' order cannot be read: ranking them by their directories' times",
              {{"path", snapshots.PathOf(kSnapshotOrder)}});
    return {};
  }
  return out;
}

}  // namespace

Result<std::vector<SnapshotInfo>> ListSnapshots(const Volume& volume) {
  std::vector<SnapshotInfo> out;
  auto snapshots = volume.bookkeeping().OpenSub(kSnapshots);
  if (!snapshots) {
    if (snapshots.error().err == ENOENT) return out;
    return std::unexpected(snapshots.error());
  }
  auto entries = snapshots->List();
  if (!entries) return std::unexpected(entries.error());
  const std::vector<Recorded> order = ReadOrder(*snapshots);
  for (const auto& e : *entries) {
    if (e.name.starts_with('.')) continue;
    struct stat st;
    if (::fstatat(snapshots->fd(), e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
      continue;
    SnapshotInfo info{e.name, static_cast<std::int64_t>(st.st_mtime), 0};
    for (const Recorded& r : order) {
      if (r.name == e.name && r.sequence > info.sequence) {
        info.sequence = r.sequence;
        info.taken = r.taken;
      }
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const SnapshotInfo& a, const SnapshotInfo& b) {
    if (a.sequence != b.sequence) return a.sequence > b.sequence;
    return a.taken != b.taken ? a.taken > b.taken : a.name > b.name;
  });
  return out;
}

Result<void> RecordNewest(const Dir& snapshots, const std::string& name) {
  // A restore of a volume without a run directory saved nothing.
  auto there = snapshots.Stat(name);
  if (!there) return std::unexpected(there.error());
  if (!*there) return {};
  std::vector<Recorded> order = ReadOrder(snapshots);
  std::uint64_t last = 0;
  for (const Recorded& r : order) last = std::max(last, r.sequence);
  for (const Recorded& r : order) {
    if (r.name == name && r.sequence == last) return {};
  }
  Record record;
  for (const Recorded& r : order) {
    auto st = snapshots.Stat(r.name);
    if (r.name == name || (st && !*st)) continue;  // replaced below, or gone
    record.push_back({"snapshot", std::to_string(r.sequence) + " " + std::to_string(r.taken) + " " + r.name});
  }
  record.push_back(
      {"snapshot", std::to_string(last + 1) + " " + std::to_string(std::time(nullptr)) + " " + name});
  if (auto written = WriteFileAtomic(snapshots, kSnapshotOrder, EncodeRecord(record)); !written) return written;
  FaultPoint("snapshot order");
  return {};
}

Result<void> Prune(const Volume& volume, int keep) {
  auto list = ListSnapshots(volume);
  if (!list) return std::unexpected(list.error());
  if (static_cast<int>(list->size()) <= keep) return {};
  auto snapshots = volume.bookkeeping().OpenSub(kSnapshots);
  if (!snapshots) return std::unexpected(snapshots.error());
  for (size_t i = static_cast<size_t>(std::max(keep, 0)); i < list->size(); ++i) {
    auto removed = RemoveEntry(*snapshots, (*list)[i].name);
    if (!removed) return std::unexpected(removed.error());
    FaultPoint("snapshot prune");
    log::Info("removed an old snapshot", {{"snapshot", snapshots->PathOf((*list)[i].name)}});
  }
  // Gone for good before the journal is cleared.
  return SyncDir(*snapshots);
}

std::string SnapshotPath(const Volume& volume, const std::string& name) {
  return volume.BookkeepingPath(std::string(kSnapshots) + "/" + name);
}

std::string_view ReflinkWord(const CopyStats& copy) {
  if (copy.subvolume) return "yes";
  if (copy.reflinked == 0) return copy.data_files == 0 ? "nothing to share" : "no";
  return copy.reflinked == copy.data_files ? "yes" : "partly";
}

std::string_view ReflinkOf(std::string_view fs) {
  if (fs == "btrfs") return "yes; subvolume snapshots, at once, from the first version change on";
  if (fs == "xfs") return "yes if made with reflink=1 (the default since xfsprogs 5.1)";
  if (fs == "ext4" || fs == "tmpfs" || fs == "overlay") return "no: snapshots are full copies";
  return "unknown (each snapshot's log line says)";
}

void LogSnapshotTaken(std::string_view message, const Volume& volume, const std::string& name,
                      const SnapshotTaken& taken) {
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.1f", static_cast<double>(taken.copy.bytes) / (1 << 20));
  // A subvolume snapshot walks no file: there is nothing to count.
  if (taken.copy.subvolume) {
    log::Info(message, {{"snapshot", SnapshotPath(volume, name)},
                        {"method", "subvolume snapshot"},
                        {"reflink", std::string(ReflinkWord(taken.copy))},
                        {"filesystem", taken.filesystem},
                        {"ms", std::to_string(taken.elapsed.count())}});
    return;
  }
  log::Info(message, {{"snapshot", SnapshotPath(volume, name)},
                      {"method", "copy"},
                      {"files", std::to_string(taken.copy.files)},
                      {"MiB", mib},
                      {"reflink", std::string(ReflinkWord(taken.copy))},
                      {"filesystem", taken.filesystem},
                      {"ms", std::to_string(taken.elapsed.count())}});
}

}  // namespace agent_init
