#include "image/home_files.h"

#include <cctype>

namespace agent_init {
namespace {

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

bool IsShortHash(std::string_view s) {
  if (s.size() != 6) return false;
  for (char c : s)
    if (!IsLowerHex(c)) return false;
  return true;
}

// N.N.N[-QUALIFIER]
bool IsVersion(std::string_view v) {
  size_t i = 0;
  for (int part = 0; part < 3; ++part) {
    if (part > 0) {
      if (i >= v.size() || v[i] != '.') return false;
      ++i;
    }
    size_t start = i;
    while (i < v.size() && IsDigit(v[i])) ++i;
    if (i == start) return false;
  }
  if (i == v.size()) return true;
  if (v[i] != '-' || i + 1 == v.size()) return false;
  for (++i; i < v.size(); ++i)
    if (!IsAlnum(v[i]) && v[i] != '.') return false;
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

size_t Indent(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && line[n] == ' ') ++n;
  return n;
}

// A YAML scalar as written on one line: strips a trailing comment and quotes.
std::string_view Scalar(std::string_view v) {
  v = Trim(v);
  if (!v.empty() && (v.front() == '"' || v.front() == '\'')) {
    char quote = v.front();
    size_t end = v.find(quote, 1);
    if (end == std::string_view::npos) return {};
    return v.substr(1, end - 1);
  }
  if (!v.empty() && v.front() == '#') return {};
  size_t hash = v.find(" #");
  if (hash != std::string_view::npos) v = v.substr(0, hash);
  return Trim(v);
}

}  // namespace

std::optional<VersionedHomeName> ParseVersionedHomeName(std::string_view name) {
  constexpr std::string_view kPrefix = "elastic-agent-";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  std::string_view rest = name.substr(kPrefix.size());
  if (IsShortHash(rest)) return VersionedHomeName{"", std::string(rest)};
  if (rest.size() < 8 || rest[rest.size() - 7] != '-') return std::nullopt;
  std::string_view hash = rest.substr(rest.size() - 6);
  std::string_view version = rest.substr(0, rest.size() - 7);
  if (!IsShortHash(hash) || !IsVersion(version)) return std::nullopt;
  return VersionedHomeName{std::string(version), std::string(hash)};
}

std::optional<std::string> ParseCommitHash(std::string_view content) {
  std::string_view s = Trim(content);
  if (s.size() < 6) return std::nullopt;
  std::string out;
  for (char c : s) {
    char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!IsLowerHex(lower)) return std::nullopt;
    if (out.size() < 6) out += lower;
  }
  return out;
}

std::optional<std::string> ParseManifestVersionedHome(std::string_view yaml) {
  bool in_package = false;
  size_t child_indent = 0;
  while (!yaml.empty()) {
    size_t nl = yaml.find('\n');
    std::string_view line = yaml.substr(0, nl);
    yaml = nl == std::string_view::npos ? std::string_view{} : yaml.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view body = Trim(line);
    if (body.empty() || body.front() == '#') continue;
    size_t indent = Indent(line);
    if (indent == 0) {
      size_t colon = body.find(':');
      in_package = colon != std::string_view::npos && body.substr(0, colon) == "package" &&
                   Scalar(body.substr(colon + 1)).empty();
      child_indent = 0;
      continue;
    }
    if (!in_package) continue;
    if (child_indent == 0) child_indent = indent;
    if (indent != child_indent) continue;  // deeper levels belong to other keys
    size_t colon = body.find(':');
    if (colon == std::string_view::npos) continue;
    if (Trim(body.substr(0, colon)) != "versioned-home") continue;
    std::string_view value = Scalar(body.substr(colon + 1));
    constexpr std::string_view kData = "data/";
    if (!value.starts_with(kData)) return std::nullopt;
    value.remove_prefix(kData.size());
    while (!value.empty() && value.back() == '/') value.remove_suffix(1);
    if (value.empty() || value.find('/') != std::string_view::npos || value == "." || value == "..")
      return std::nullopt;
    return std::string(value);
  }
  return std::nullopt;
}

}  // namespace agent_init
