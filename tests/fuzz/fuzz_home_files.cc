// manifest.yaml, commit files and versioned-home names come from the image.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "image/home_files.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto name = agent_init::ParseVersionedHomeName(text)) {
    if (name->hash.size() != 6) __builtin_trap();
  }
  if (auto hash = agent_init::ParseCommitHash(text)) {
    if (hash->size() != 6) __builtin_trap();
  }
  if (auto vh = agent_init::ParseManifestVersionedHome(text)) {
    // Never a path that could leave HOME/data.
    if (vh->empty() || vh->find('/') != std::string::npos || *vh == ".." || *vh == ".") __builtin_trap();
  }
  return 0;
}
