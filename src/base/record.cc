#include "base/record.h"

namespace agent_init {
namespace {

bool IsKeyChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string EscapeValue(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (unsigned char c : value) {
    if (c <= ' ' || c >= 0x7f || c == '%') {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::optional<std::string> UnescapeValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    char c = value[i];
    if (c == '%') {
      if (i + 2 >= value.size()) return std::nullopt;
      int hi = HexValue(value[i + 1]);
      int lo = HexValue(value[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f) {
      return std::nullopt;
    } else {
      out += c;
    }
  }
  return out;
}

std::string EncodeRecord(const Record& record) {
  std::string out;
  for (const auto& [key, value] : record) {
    out += key;
    out += ' ';
    out += EscapeValue(value);
    out += '\n';
  }
  return out;
}

std::optional<Record> DecodeRecord(std::string_view text) {
  Record out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;  // torn write
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0) return std::nullopt;
    std::string_view key = line.substr(0, space);
    for (char c : key)
      if (!IsKeyChar(c)) return std::nullopt;
    auto value = UnescapeValue(line.substr(space + 1));
    if (!value) return std::nullopt;
    out.emplace_back(std::string(key), std::move(*value));
  }
  return out;
}

std::optional<std::string> Lookup(const Record& record, std::string_view key) {
  for (const auto& [k, v] : record)
    if (k == key) return v;
  return std::nullopt;
}

}  // namespace agent_init
