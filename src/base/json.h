// A small streaming JSON writer for `inspect --json` and JSON logs. Paths
// come from untrusted volumes, so strings are escaped completely and invalid
// UTF-8 becomes U+FFFD instead of producing invalid JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace agent_init {

/// Appends `s` to `out` as a quoted JSON string.
void AppendJsonString(std::string& out, std::string_view s);

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(std::int64_t value);
  JsonWriter& Uint(std::uint64_t value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

  /// Key + String in one call; the most common pair.
  JsonWriter& Field(std::string_view key, std::string_view value) { return Key(key).String(value); }

  const std::string& str() const { return out_; }

 private:
  void BeforeValue();
  JsonWriter& Open(char bracket);
  JsonWriter& Close(char bracket);

  std::string out_;
  // One entry per open container: true once it holds an element.
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

}  // namespace agent_init
