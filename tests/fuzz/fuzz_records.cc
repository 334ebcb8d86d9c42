// The journal, history and owner files live on the untrusted volume.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/record.h"
#include "volume/history.h"
#include "volume/journal.h"
#include "volume/lock.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto r = agent_init::DecodeRecord(text)) {
    // What parses re-encodes to something that parses to the same.
    auto again = agent_init::DecodeRecord(agent_init::EncodeRecord(*r));
    if (!again || *again != *r) __builtin_trap();
  }
  if (auto intent = agent_init::DecodeIntent(text)) {
    auto again = agent_init::DecodeIntent(agent_init::EncodeIntent(*intent));
    if (!again || again->op != intent->op || again->phase != intent->phase || again->id != intent->id)
      __builtin_trap();
  }
  if (auto history = agent_init::DecodeHistory(text)) {
    auto again = agent_init::DecodeHistory(agent_init::EncodeHistory(*history));
    if (!again || again->current != history->current || again->changes.size() != history->changes.size()) {
      __builtin_trap();
    }
  }
  (void)agent_init::DecodeOwner(text);
  return 0;
}
