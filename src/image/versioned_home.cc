#include "image/versioned_home.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "base/enum_names.h"
#include "image/home_files.h"

namespace agent_init {
namespace {

constexpr std::string_view kHomeSymlink = "elastic-agent";
constexpr std::string_view kManifest = "manifest.yaml";
constexpr std::string_view kActiveCommit = ".elastic-agent.active.commit";
constexpr std::string_view kBuildHash = ".build_hash.txt";

std::string ListNames(const std::vector<Candidate>& candidates) {
  if (candidates.empty()) return "none";
  std::string out;
  for (const auto& c : candidates) {
    if (!out.empty()) out += ", ";
    out += c.name;
  }
  return out;
}

const Candidate* FindCandidate(const std::vector<Candidate>& candidates, std::string_view name) {
  for (const auto& c : candidates)
    if (c.name == name) return &c;
  return nullptr;
}

// Real directories in HOME/data whose names are versioned homes. Symlinks and
// other files with such names are reported, never followed.
void ListCandidates(const Dir& data, Discovery& out) {
  auto entries = data.List();
  if (!entries) {
    out.error = Wrap(entries.error(), "list versioned homes");
    return;
  }
  for (const auto& entry : *entries) {
    auto parsed = ParseVersionedHomeName(entry.name);
    if (!parsed) continue;
    unsigned char type = entry.type;
    if (type == DT_UNKNOWN) {
      struct stat st;
      if (::fstatat(data.fd(), entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
      }
    }
    if (type != DT_DIR) {
      out.warnings.push_back(Q(data.PathOf(entry.name)) +
                             " is not a real directory (a symlink or a file); ignored");
      continue;
    }
    out.candidates.push_back(Candidate{entry.name, parsed->version, parsed->hash});
  }
  std::sort(out.candidates.begin(), out.candidates.end(),
            [](const Candidate& a, const Candidate& b) { return a.name < b.name; });
}

// The versioned home that HOME/elastic-agent points into, if it points into
// HOME/data/<versioned home>/.
void HomeSymlinkEvidence(const Dir& home, Discovery& out) {
  auto target = home.ReadLink(kHomeSymlink);
  if (!target) return;
  std::string resolved =
      target->starts_with('/') ? NormalizePath(*target) : NormalizePath(home.path() + "/" + *target);
  // The home as given, and (only when that does not match) as the kernel
  // resolves it.
  std::vector<std::string> prefixes{NormalizePath(home.path())};
  if (!resolved.starts_with(prefixes.front() == "/" ? "/data/" : prefixes.front() + "/data/")) {
    char real[PATH_MAX];
    if (::realpath(home.path().c_str(), real) != nullptr) prefixes.emplace_back(real);
  }
  for (const auto& prefix : prefixes) {
    std::string data = (prefix == "/" ? "" : prefix) + "/data/";
    if (!resolved.starts_with(data)) continue;
    std::string_view rest = std::string_view(resolved).substr(data.size());
    std::string_view name = rest.substr(0, rest.find('/'));
    if (!ParseVersionedHomeName(name)) break;
    out.evidence.push_back(
        Evidence{Rule::kHomeSymlink, home.PathOf(kHomeSymlink), *target, std::string(name), false});
    return;
  }
  out.warnings.push_back(Q(home.PathOf(kHomeSymlink)) + " points to " + Q(*target) +
                         ", not into a versioned home under " + Q(home.PathOf("data")) +
                         "; not used as evidence");
}

// The content of an evidence file in the home; nothing when it is absent,
// and a warning when it cannot be read.
std::optional<std::string> ReadEvidenceFile(const Dir& home, std::string_view file, Discovery& out) {
  auto text = home.ReadSmallFile(file);
  if (!text) {
    out.warnings.push_back(text.error().msg + "; not used as evidence");
    return std::nullopt;
  }
  return std::move(*text);
}

void ManifestEvidence(const Dir& home, Discovery& out) {
  auto text = ReadEvidenceFile(home, kManifest, out);
  if (!text) return;
  auto name = ParseManifestVersionedHome(*text);
  if (!name) {
    out.warnings.push_back(Q(home.PathOf(kManifest)) +
                           " has no usable package.versioned-home; not used as evidence");
    return;
  }
  out.evidence.push_back(Evidence{Rule::kManifest, home.PathOf(kManifest), "data/" + *name, *name, false});
}

// A commit file names a hash; it names a versioned home when exactly one
// candidate carries that hash (the legacy name wins over a versioned one, as
// in the agent's own fallback).
void CommitEvidence(const Dir& home, std::string_view file, Rule rule, Discovery& out) {
  auto text = ReadEvidenceFile(home, file, out);
  if (!text) return;
  auto hash = ParseCommitHash(*text);
  if (!hash) {
    out.warnings.push_back(Q(home.PathOf(file)) + " does not hold a commit hash; not used as evidence");
    return;
  }
  Evidence ev{rule, home.PathOf(file), *hash, std::nullopt, false};
  std::vector<const Candidate*> matches;
  for (const auto& c : out.candidates)
    if (c.hash == *hash) matches.push_back(&c);
  if (matches.size() == 1) {
    ev.names = matches.front()->name;
  } else if (matches.size() > 1) {
    const std::string legacy = "elastic-agent-" + *hash;
    if (FindCandidate(out.candidates, legacy)) ev.names = legacy;
  } else {
    ev.names = "elastic-agent-" + *hash;  // the directory that should be there
  }
  if (matches.size() > 1 && !ev.names) {
    // Several versioned homes share the hash and none has the legacy name:
    // the hash cannot tell them apart.
    ev.says += " (matches several versioned homes)";
  }
  out.evidence.push_back(std::move(ev));
}

std::string DescribeEvidence(const Evidence& ev) {
  switch (ev.rule) {
    case Rule::kOption:
      return "--versioned-home names " + Q(ev.says);
    case Rule::kHomeSymlink:
      return Q(ev.source) + " points to " + Q(ev.says);
    case Rule::kManifest:
      return Q(ev.source) + " names " + Q(ev.says);
    case Rule::kActiveCommit:
    case Rule::kBuildHash:
      return Q(ev.source) + " holds commit " + ev.says;
    case Rule::kOnlyCandidate:
      return "the only versioned home is " + Q(ev.says);
    case Rule::kNone:
      break;
  }
  return ev.source;
}

}  // namespace

std::string_view RuleName(Rule rule) {
  static constexpr EnumName<Rule> kNames[] = {
      {Rule::kNone, "none"},
      {Rule::kOption, "option"},
      {Rule::kHomeSymlink, "home-symlink"},
      {Rule::kManifest, "manifest"},
      {Rule::kActiveCommit, "active-commit"},
      {Rule::kBuildHash, "build-hash"},
      {Rule::kOnlyCandidate, "only-candidate"},
  };
  return NameOf(rule, kNames);
}

Discovery Discover(const Dir& home, const Dir& data, const std::string& forced, Listing listing) {
  Discovery out;
  out.data_path = data.path();

  // The strong evidence needs no listing of HOME/data.
  if (!forced.empty()) {
    out.evidence.push_back(Evidence{Rule::kOption, "--versioned-home", forced, forced, false});
  }
  HomeSymlinkEvidence(home, out);
  ManifestEvidence(home, out);
  // On the restart path, when that evidence names a real directory, HOME/data
  // (which may hold thousands of entries) is not listed.
  bool listed = true;
  if (listing == Listing::kWhenNeeded && !out.evidence.empty() && out.evidence.front().names) {
    const std::string& name = *out.evidence.front().names;
    struct stat st;
    if (IsPlainName(name) && ::fstatat(data.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(st.st_mode)) {
      auto parsed = ParseVersionedHomeName(name);
      out.candidates.push_back(Candidate{name, parsed ? parsed->version : "", parsed ? parsed->hash : ""});
      listed = false;
    }
  }
  if (listed) {
    ListCandidates(data, out);
    if (out.error) return out;
  }
  CommitEvidence(home, kActiveCommit, Rule::kActiveCommit, out);
  CommitEvidence(home, kBuildHash, Rule::kBuildHash, out);
  if (listed && out.candidates.size() == 1) {
    const auto& only = out.candidates.front().name;
    out.evidence.push_back(Evidence{Rule::kOnlyCandidate, out.data_path, only, only, true});
  }
  for (auto& ev : out.evidence) ev.exists = ev.names && FindCandidate(out.candidates, *ev.names);

  // --versioned-home may name any real directory under data, also one whose
  // name does not follow the agent's pattern.
  if (!forced.empty() && !out.evidence.front().exists && IsPlainName(forced)) {
    struct stat st;
    if (::fstatat(data.fd(), forced.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
      out.evidence.front().exists = true;
    }
  }

  if (out.evidence.empty()) {
    if (out.candidates.empty()) {
      out.error = MakeError(
          Kind::kLayout, 0,
          "no versioned home in " + Q(out.data_path) + ": expected a directory named elastic-agent-<hash>",
          "check --home / AGENT_INIT_HOME, or name the directory with "
          "--versioned-home / AGENT_INIT_VERSIONED_HOME");
    } else {
      out.error = MakeError(Kind::kLayout, 0,
                            "several versioned homes in " + Q(out.data_path) + " (" +
                                ListNames(out.candidates) + ") and nothing says which is active",
                            "name one with --versioned-home / AGENT_INIT_VERSIONED_HOME");
    }
    return out;
  }

  const Evidence& decider = out.evidence.front();
  if (!decider.names) {
    out.error = MakeError(Kind::kLayout, 0,
                          DescribeEvidence(decider) + ", which matches several versioned homes (" +
                              ListNames(out.candidates) + ")",
                          "name one with --versioned-home / AGENT_INIT_VERSIONED_HOME");
    return out;
  }
  if (!decider.exists) {
    out.error =
        MakeError(Kind::kLayout, 0,
                  "broken installation: " + DescribeEvidence(decider) + ", but " +
                      Q(out.data_path + "/" + *decider.names) +
                      " does not exist; versioned homes present: " + ListNames(out.candidates),
                  "this is what an interrupted or repeated upgrade leaves behind; use an image whose home "
                  "is intact, or name the versioned home to use with --versioned-home");
    return out;
  }
  out.versioned_home = *decider.names;
  out.rule = decider.rule;
  for (size_t i = 1; i < out.evidence.size(); ++i) {
    const Evidence& ev = out.evidence[i];
    if (ev.rule == Rule::kOnlyCandidate || ev.names == decider.names) continue;
    std::string what = DescribeEvidence(ev);
    what += ev.names ? " (" + *ev.names + ")" : "";
    out.warnings.push_back(what + " disagrees with " + std::string(RuleName(decider.rule)) +
                           ", which decided " + *decider.names +
                           (ev.rule == Rule::kBuildHash ? "; expected after an in-place upgrade" : ""));
  }
  return out;
}

}  // namespace agent_init
