#include "process/users.h"

#include "base/dir.h"

#include <algorithm>

namespace agent_init {
namespace {

std::vector<std::string_view> SplitFields(std::string_view line, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = line.find(sep, start);
    out.push_back(line.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

bool Skippable(std::string_view line) {
  return line.empty() || line.front() == '#' || line.front() == '+' || line.front() == '-';
}

// The ':'-separated fields of a passwd or group line with at least `count`
// of them and a name; std::nullopt for what the C library skips too.
std::optional<std::vector<std::string_view>> EntryFields(std::string_view line, size_t count) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (Skippable(line)) return std::nullopt;
  auto f = SplitFields(line, ':');
  if (f.size() < count || f[0].empty()) return std::nullopt;
  return f;
}

template <class Entry, class Parse>
std::vector<Entry> ParseAll(std::string_view text, Parse parse) {
  std::vector<Entry> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (auto e = parse(line)) out.push_back(std::move(*e));
  }
  return out;
}

// A missing file is empty: images without /etc/group exist, and numeric ids
// still resolve.
Result<std::string> ReadEtc(const Dir& etc, const char* name) {
  auto text = etc.ReadSmallFile(name, 8 << 20);
  if (!text) return std::unexpected(text.error());
  return text->value_or("");
}

}  // namespace

std::optional<unsigned> ParseId(std::string_view text) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  unsigned long long v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v >= 0xffffffffULL) return std::nullopt;  // (uid_t)-1 means "unchanged" to setuid
  return static_cast<unsigned>(v);
}

std::optional<PasswdEntry> ParsePasswdLine(std::string_view line) {
  auto f = EntryFields(line, 7);
  if (!f) return std::nullopt;
  auto uid = ParseId((*f)[2]);
  auto gid = ParseId((*f)[3]);
  if (!uid || !gid) return std::nullopt;
  return PasswdEntry{std::string((*f)[0]), *uid, *gid, std::string((*f)[5])};
}

std::optional<GroupEntry> ParseGroupLine(std::string_view line) {
  auto f = EntryFields(line, 4);
  if (!f) return std::nullopt;
  auto gid = ParseId((*f)[2]);
  if (!gid) return std::nullopt;
  GroupEntry g{std::string((*f)[0]), *gid, {}};
  if (!(*f)[3].empty()) {
    for (auto m : SplitFields((*f)[3], ',')) {
      if (!m.empty()) g.members.emplace_back(m);
    }
  }
  return g;
}

Result<Credentials> ResolveUser(std::string_view spec, std::string_view passwd_text,
                                std::string_view group_text) {
  if (spec.empty()) return Fail(Kind::kUsage, "--user is empty: give USER or USER:GROUP");
  size_t colon = spec.find(':');
  std::string_view user = spec.substr(0, colon);
  std::optional<std::string_view> group;
  if (colon != std::string_view::npos) group = spec.substr(colon + 1);
  if (user.empty() || (group && group->empty())) {
    return Fail(Kind::kUsage, "--user " + Q(spec) + ": give USER or USER:GROUP");
  }
  // A number is an id, never a name: one too large is out of range, not an
  // unknown user.
  for (auto [what, text] : {std::pair{"uid", user}, std::pair{"gid", group.value_or("")}}) {
    if (!text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos && !ParseId(text)) {
      return Fail(Kind::kUsage,
                  "--user " + Q(spec) + ": " + what + " " + std::string(text) + " is out of range",
                  std::string("ids are 0 to 4294967294 (4294967295 is the kernel's \"no change\")"));
    }
  }
  auto passwd = ParseAll<PasswdEntry>(passwd_text, ParsePasswdLine);
  auto groups = ParseAll<GroupEntry>(group_text, ParseGroupLine);

  Credentials c;
  const PasswdEntry* pw = nullptr;
  if (auto id = ParseId(user)) {
    c.uid = *id;
    for (const auto& p : passwd) {
      if (p.uid == *id) {
        pw = &p;
        break;
      }
    }
  } else {
    for (const auto& p : passwd) {
      if (p.name == user) {
        pw = &p;
        break;
      }
    }
    if (pw == nullptr) {
      return Fail(Kind::kNoUser, "--user: no user named " + Q(user) + " in /etc/passwd",
                  "use a user that exists in the image, or numeric ids (e.g. 1000:1000)");
    }
    c.uid = pw->uid;
  }
  if (pw != nullptr) {
    c.name = pw->name;
    c.home = pw->home;
  }

  if (group) {
    if (auto id = ParseId(*group)) {
      c.gid = *id;
    } else {
      auto it =
          std::find_if(groups.begin(), groups.end(), [&](const GroupEntry& g) { return g.name == *group; });
      if (it == groups.end()) {
        return Fail(Kind::kNoUser, "--user: no group named " + Q(*group) + " in /etc/group",
                    "use a group that exists in the image, or a numeric gid");
      }
      c.gid = it->gid;
    }
    return c;  // USER:GROUP: that group only
  }
  c.gid = pw != nullptr ? pw->gid : c.uid;
  if (pw != nullptr) {
    c.groups.push_back(c.gid);  // like initgroups(3): the primary group, then memberships
    for (const auto& g : groups) {
      bool member = std::find(g.members.begin(), g.members.end(), pw->name) != g.members.end();
      if (member && std::find(c.groups.begin(), c.groups.end(), g.gid) == c.groups.end()) {
        c.groups.push_back(g.gid);
      }
    }
  }
  return c;
}

Result<Credentials> ResolveUserFromFiles(std::string_view spec, const std::string& etc_path) {
  auto etc = Dir::OpenTrusted(etc_path, Kind::kNoUser);
  if (!etc) return std::unexpected(Wrap(etc.error(), "resolve --user"));
  auto passwd = ReadEtc(*etc, "passwd");
  if (!passwd) return std::unexpected(Wrap(passwd.error(), "resolve --user"));
  auto group = ReadEtc(*etc, "group");
  if (!group) return std::unexpected(Wrap(group.error(), "resolve --user"));
  return ResolveUser(spec, *passwd, *group);
}

}  // namespace agent_init
