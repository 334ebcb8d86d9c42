// Paths from the volume reach JSON output: it must stay valid JSON text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string out;
  agent_init::AppendJsonString(out, std::string_view(reinterpret_cast<const char*>(data), size));
  if (out.size() < 2 || out.front() != '"' || out.back() != '"') __builtin_trap();
  for (size_t i = 1; i + 1 < out.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(out[i]);
    if (c < 0x20) __builtin_trap();  // raw control characters are invalid JSON
    if (c == '"' && out[i - 1] != '\\') __builtin_trap();
  }
  return 0;
}
