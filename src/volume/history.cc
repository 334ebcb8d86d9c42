#include "volume/history.h"

#include "base/atomic_file.h"
#include "base/record.h"
#include "image/home_files.h"
#include "volume/names.h"

namespace agent_init {
namespace {
constexpr const char* kFormat = "agent-init-history-1";
}  // namespace

std::string EncodeHistory(const History& h) {
  Record r{{"format", kFormat}, {"current", h.current}, {"current-hash", h.current_hash}};
  for (const auto& c : h.changes) {
    r.emplace_back("at", c.at);
    r.emplace_back("from", c.from);
    r.emplace_back("to", c.to);
  }
  return EncodeRecord(r);
}

std::optional<History> DecodeHistory(std::string_view text) {
  auto r = DecodeRecord(text);
  if (!r || r->size() < 3 || (*r)[0] != std::pair<std::string, std::string>{"format", kFormat})
    return std::nullopt;
  if ((*r)[1].first != "current" || (*r)[2].first != "current-hash") return std::nullopt;
  History h{(*r)[1].second, (*r)[2].second, {}};
  size_t rest = r->size() - 3;
  if (rest % 3 != 0) return std::nullopt;
  for (size_t i = 3; i < r->size(); i += 3) {
    if ((*r)[i].first != "at" || (*r)[i + 1].first != "from" || (*r)[i + 2].first != "to")
      return std::nullopt;
    h.changes.push_back({(*r)[i].second, (*r)[i + 1].second, (*r)[i + 2].second});
  }
  return h;
}

Result<std::optional<History>> ReadHistory(const Dir& aidir) {
  auto text = aidir.ReadSmallFile(names::kHistory);
  if (!text) return std::unexpected(text.error());
  if (!*text) return std::optional<History>{};
  auto h = DecodeHistory(**text);
  if (!h) {
    return Fail(Kind::kLayout,
                "read " + Q(aidir.PathOf(names::kHistory)) + ": not a valid agent-init history",
                "remove the file; agent-init starts a new history (and takes no snapshot this time)");
  }
  return std::optional<History>{std::move(*h)};
}

Result<void> WriteHistory(const Dir& aidir, const History& history) {
  auto r = WriteFileAtomic(aidir, names::kHistory, EncodeHistory(history));
  if (!r) return std::unexpected(Wrap(r.error(), "write history"));
  return {};
}

History WithChange(History history, const std::string& to, const std::string& at) {
  if (history.current != to) {
    history.changes.push_back({at, history.current, to});
    if (history.changes.size() > kMaxHistory) {
      history.changes.erase(history.changes.begin(),
                            history.changes.end() - static_cast<std::ptrdiff_t>(kMaxHistory));
    }
  }
  history.current = to;
  auto parsed = ParseVersionedHomeName(to);
  history.current_hash = parsed ? parsed->hash : "";
  return history;
}

}  // namespace agent_init
