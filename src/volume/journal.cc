#include "volume/journal.h"

#include "base/atomic_file.h"
#include "base/dir.h"
#include "base/fault.h"
#include "image/agent_files.h"
#include "volume/names.h"

namespace agent_init {

std::string EncodeIntent(const Intent& intent) {
  Record r{{"format", "agent-init-journal-1"}, {"op", intent.op}, {"id", intent.id}, {"phase", intent.phase}};
  for (const auto& kv : intent.args) r.push_back(kv);
  return EncodeRecord(r);
}

bool IsCarryPlace(std::string_view rel) {
  return rel.empty() || rel == names::kHome || rel == names::kVersionedHome || rel == names::kData;
}

namespace {

// A carry's names, '/'-separated: each one of the agent's files (the table).
bool KnownAgentFiles(std::string_view joined) {
  while (!joined.empty()) {
    size_t slash = joined.find('/');
    std::string_view name = joined.substr(0, slash);
    bool known = false;
    for (Layout l : {Layout::kRun, Layout::kState}) {
      for (const AgentFile* f : AgentFilesFor(l)) known = known || f->name == name;
    }
    if (!known) return false;
    joined = slash == std::string_view::npos ? std::string_view{} : joined.substr(slash + 1);
  }
  return true;
}

// The journal lives on the untrusted volume: every name in it must be a
// plain directory entry (no "/", no "..", no dot file of agent-init's own)
// or one of the few places agent-init names itself, and numbers within
// range, before recovery acts on it.
bool ValidArgs(const Record& args) {
  for (const auto& [key, value] : args) {
    if (key == "saved-as" && !IsVisibleName(value)) return false;
    if (key == "run-parent" && !value.empty() && value != names::kData) return false;
    if ((key == "carry-into" || key == "carry-from") && !IsCarryPlace(value)) return false;
    if (key == "carry-move" && value != "0" && value != "1") return false;
    if (key == "carry-names" && !KnownAgentFiles(value)) return false;
    if (key == "keep") {
      if (value.empty() || value.size() > 4) return false;
      for (char c : value)
        if (c < '0' || c > '9') return false;
      int n = std::stoi(value);
      if (n < 1 || n > kMaxKeepSnapshots + 1) return false;  // a restore's: one more
    }
    // The run directory a migration moves from and into (a layout change):
    // one of the two layouts' own.
    if ((key == "volume-from" || key == "into") && value != names::kRun && value != names::kDataRun) return false;
    if (key == "subvolume-run" && value != "yes" && value != "no") return false;
  }
  return true;
}

}  // namespace

std::optional<Intent> DecodeIntent(std::string_view text) {
  auto r = DecodeRecord(text);
  if (!r || r->size() < 4) return std::nullopt;
  if ((*r)[0] != std::pair<std::string, std::string>{"format", "agent-init-journal-1"}) return std::nullopt;
  if ((*r)[1].first != "op" || (*r)[2].first != "id" || (*r)[3].first != "phase") return std::nullopt;
  Intent out{(*r)[1].second, (*r)[2].second, (*r)[3].second, Record(r->begin() + 4, r->end())};
  if (out.op.empty() || out.phase.empty() || !IsVisibleName(out.id) || !ValidArgs(out.args))
    return std::nullopt;
  return out;
}

Result<std::optional<Intent>> Journal::Read() const {
  auto text = dir_.ReadSmallFile(names::kJournal);
  if (!text) return std::unexpected(text.error());
  if (!*text) return std::optional<Intent>{};
  auto intent = DecodeIntent(**text);
  if (!intent) {
    return Fail(Kind::kLayout, "read journal " + Q(Path()) + ": not a valid agent-init journal",
                "agent-init will not guess how to finish an unknown change; inspect the volume, "
                "then remove the file by hand");
  }
  return std::optional<Intent>{std::move(*intent)};
}

Result<void> Journal::Write(const Intent& intent) {
  auto r = WriteFileAtomic(dir_, names::kJournal, EncodeIntent(intent));
  if (!r) return std::unexpected(Wrap(r.error(), "write journal"));
  FaultPoint("journal " + intent.op + " " + intent.phase);
  return {};
}

std::string Journal::Path() const { return dir_.PathOf(names::kJournal); }

Result<void> Journal::Clear() {
  auto r = RemoveFileDurable(dir_, names::kJournal);
  if (!r) return std::unexpected(Wrap(r.error(), "clear journal"));
  FaultPoint("journal clear");
  return {};
}

}  // namespace agent_init
