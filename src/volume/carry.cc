#include "volume/carry.h"

#include <algorithm>

#include "base/fault.h"
#include "base/log.h"
#include "base/record.h"
#include "base/sys.h"
#include "base/tree.h"
#include "volume/names.h"

namespace agent_init {
namespace {

constexpr const char* kPhaseCopy = "copy";
constexpr const char* kPhasePublish = "publish";
constexpr const char* kPhaseRemove = "remove";

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : "/") + n;
  return out;
}

std::vector<std::string> SplitNames(std::string_view joined) {
  std::vector<std::string> out;
  while (!joined.empty()) {
    size_t slash = joined.find('/');
    out.emplace_back(joined.substr(0, slash));
    joined = slash == std::string_view::npos ? std::string_view{} : joined.substr(slash + 1);
  }
  return out;
}

Result<Dir> OpenPlace(const Volume& volume, const std::string& rel) {
  return rel.empty() ? volume.dir().Dup() : volume.dir().MakeSub(rel, 0770);
}

// The copies in the work directory go to their places; one that is already
// there (the volume's own) wins and the copy goes.
Result<void> Publish(Volume& volume, const std::string& into_rel, const std::vector<std::string>& names) {
  auto work = volume.bookkeeping().OpenSub(names::kCarry);
  if (!work) return work.error().err == ENOENT ? Result<void>{} : std::unexpected(work.error());  // all published
  auto into = OpenPlace(volume, into_rel);
  if (!into) return std::unexpected(into.error());
  for (const auto& name : names) {
    auto copy = work->Stat(name);
    if (!copy) return std::unexpected(copy.error());
    if (!*copy) continue;  // published before a crash
    auto there = into->Stat(name);
    if (!there) return std::unexpected(there.error());
    if (*there) {
      auto dropped = RemoveEntry(*work, name);
      if (!dropped) return dropped;
      continue;
    }
    if (sys::RenameNoReplace(work->fd(), name.c_str(), into->fd(), name.c_str()) < 0)
      return SysFail(errno, "move " + Q(work->PathOf(name)) + " to " + Q(into->path()));
    FaultPoint("carry publish");
  }
  return SyncDir(*into);
}


Result<void> RemoveOriginals(const Dir& from, const std::vector<std::string>& names, bool sync) {
  for (const auto& name : names) {
    auto removed = RemoveEntry(from, name);
    if (!removed) return removed;
    FaultPoint("carry remove");
  }
  return sync ? SyncDir(from) : Result<void>{};
}

// The (empty) work directory goes before the journal: a crash between the
// two finds nothing left to publish.
Result<void> Finish(Volume& volume) {
  if (auto removed = RemoveEntry(volume.bookkeeping(), names::kCarry); !removed) return removed;
  return volume.journal().Clear();
}

}  // namespace

Result<std::optional<Dir>> OpenVolumePlace(const Volume& volume, const std::string& rel) {
  if (!rel.empty()) return volume.dir().OpenSubIfAny(rel);
  auto dup = volume.dir().Dup();
  if (!dup) return std::unexpected(dup.error());
  return std::optional<Dir>{std::move(*dup)};
}

bool SameAgentFile(const Dir& a, const Dir& b, const AgentFile& f) {
  const std::string name(f.name);
  if (f.shape == FileShape::kFile) {
    auto same = SameFileContent(a, name, b, name);
    return same && *same;
  }
  auto da = a.OpenSub(name);
  auto db = b.OpenSub(name);
  if (!da || !db) return false;
  auto same = SameTree(*da, *db);
  return same && *same;
}

Result<void> Carry(Volume& volume, const CarryRequest& r) {
  if (r.names.empty()) return {};
  Intent intent{kOpCarry,
                "identity",
                kPhaseCopy,
                {{"carry-into", r.into_rel},
                 {"carry-names", JoinNames(r.names)},
                 {"carry-move", !r.remove.empty() && r.from_volume_rel ? "1" : "0"}}};
  if (r.from_volume_rel) intent.args.push_back({"carry-from", *r.from_volume_rel});
  if (auto w = volume.journal().Write(intent); !w) return w;
  // A copy cut short by an earlier crash was dropped by recovery; anything
  // left is started again.
  if (auto cleared = RemoveEntry(volume.bookkeeping(), names::kCarry); !cleared) return cleared;
  auto work = volume.bookkeeping().MakeSub(names::kCarry, 0700);
  if (!work) return std::unexpected(work.error());
  // From the volume or from a CONFIG_PATH outside it alike: the agent
  // wrote both, not the image's author, and its files have one name each.
  for (const auto& name : r.names) {
    auto copied = CopyEntry(*r.from, name, *work, name);
    if (!copied) return std::unexpected(Wrap(copied.error(), "carry " + Q(r.from->PathOf(name)) + " onto the volume"));
  }
  if (auto synced = SyncFilesystem(*work); !synced) return synced;
  FaultPoint("carry copy");
  intent.phase = kPhasePublish;
  if (auto w = volume.journal().Write(intent); !w) return w;
  if (auto published = Publish(volume, r.into_rel, r.names); !published) return published;
  if (!r.remove.empty()) {
    const bool on_volume = r.from_volume_rel.has_value();
    if (on_volume) {
      intent.phase = kPhaseRemove;
      if (auto w = volume.journal().Write(intent); !w) return w;
    }
    if (auto removed = RemoveOriginals(*r.from, r.remove, on_volume); !removed) {
      if (on_volume) return removed;
      // The originals outside the volume stay where they are: the agent no
      // longer reads them there, and the volume's copy wins from now on.
      log::Warn("could not remove what was carried onto the volume from its old place",
                {{"from", r.from->path()}, {"error", removed.error().msg}});
    }
  }
  return Finish(volume);
}

bool IsEnrolledConfig(std::string_view text) {
  size_t fleet = text.find("fleet:");
  if (fleet == std::string_view::npos || (fleet > 0 && text[fleet - 1] != '\n')) return false;
  std::string_view rest = text.substr(fleet + 6);
  size_t enabled = rest.find("enabled:");
  if (enabled == std::string_view::npos) return false;
  std::string_view value = rest.substr(enabled + 8);
  return value.substr(value.find_first_not_of(' ')).starts_with("true");
}

Result<bool> CarryAgentFiles(Volume& volume, const Dir& from, const std::optional<std::string>& from_volume_rel,
                             const std::string& into_rel, const std::vector<const AgentFile*>& files, bool move) {
  // Looked at where it is, made only when something is carried into it.
  auto opened = OpenVolumePlace(volume, into_rel);
  if (!opened) return std::unexpected(opened.error());
  const std::optional<Dir>& into = *opened;
  auto has = [](const std::optional<Dir>& dir, std::string_view name) -> Result<bool> {
    if (!dir) return false;
    auto st = dir->Stat(name);
    if (!st) return std::unexpected(st.error());
    return st->has_value();
  };
  bool identity_on_volume = false;
  std::vector<std::string> identity, others, differing;
  for (const AgentFile* f : files) {
    auto here = has(into, f->name);
    if (!here) return std::unexpected(here.error());
    if (f->role == FileRole::kIdentity) identity_on_volume = identity_on_volume || *here;
  }
  for (const AgentFile* f : files) {
    const std::string name(f->name);
    auto there = from.Stat(name);
    if (!there) return std::unexpected(there.error());
    if (!*there) continue;
    auto here = has(into, name);
    if (!here) return std::unexpected(here.error());
    if (f->role == FileRole::kIdentity) {
      if (!identity_on_volume) {
        identity.push_back(name);
      } else if (*here) {
        if (!SameAgentFile(from, *into, *f)) differing.push_back(from.PathOf(name));
      } else {
        differing.push_back(from.PathOf(name));
      }
      continue;
    }
    if (*here) continue;
    if (f->role == FileRole::kEnrolment) {
      auto text = from.ReadSmallFile(name);
      if (!text || !*text || !IsEnrolledConfig(**text)) continue;
    }
    others.push_back(name);
  }
  if (!differing.empty()) {
    std::string list;
    for (const auto& d : differing) list += (list.empty() ? "" : ", ") + d;
    log::Info("another identity is where the agent kept it before; the volume's is the agent's, and that one "
              "stays where it is",
              {{"volume", volume.dir().PathOf(into_rel.empty() ? "." : into_rel)}, {"left", list}});
  }
  std::vector<std::string> names = identity;
  names.insert(names.end(), others.begin(), others.end());
  if (names.empty()) return false;
  std::vector<std::string> remove;
  for (const AgentFile* f : files) {
    if (!move || std::find(names.begin(), names.end(), f->name) == names.end()) continue;
    if (!from_volume_rel && f->role == FileRole::kEnrolment) continue;
    remove.emplace_back(f->name);
  }
  CarryRequest request{&from, from_volume_rel, into_rel, names, remove};
  if (auto carried = Carry(volume, request); !carried) return std::unexpected(carried.error());
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  log::Info(move ? "moved the agent's files onto the volume" : "carried the agent's files onto the volume",
            {{"from", from.path()}, {"to", volume.dir().PathOf(into_rel.empty() ? "." : into_rel)}, {"files", list}});
  return true;
}

Result<void> ResumeCarry(const Intent& in, Volume& volume) {
  const std::string into = Lookup(in.args, "carry-into").value_or("");
  const std::optional<std::string> from = Lookup(in.args, "carry-from");
  const std::vector<std::string> names = SplitNames(Lookup(in.args, "carry-names").value_or(""));
  if (in.phase == kPhaseCopy) {
    log::Info("an interrupted carry of the agent's files was dropped before it was published; it is made again",
              {{"journal", volume.journal().Path()}});
    return Finish(volume);
  }
  if (in.phase == kPhasePublish) {
    if (auto published = Publish(volume, into, names); !published) return published;
  }
  if (Lookup(in.args, "carry-move") == "1" && from) {
    auto origin = from->empty() ? volume.dir().Dup() : volume.dir().OpenSub(*from);
    if (origin) {
      if (auto removed = RemoveOriginals(*origin, names, true); !removed) return removed;
    } else if (origin.error().err != ENOENT) {
      return std::unexpected(origin.error());
    }
  }
  log::Info("finished an interrupted carry of the agent's files",
            {{"into", volume.dir().PathOf(into.empty() ? "." : into)}, {"files", JoinNames(names)}});
  return Finish(volume);
}

}  // namespace agent_init
