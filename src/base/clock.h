// Wall-clock times as agent-init writes them on the volume.
#pragma once

#include <string>

namespace agent_init {

/// The current UTC time, ISO 8601: 2026-12-02T17:01:02Z.
std::string UtcNow();

/// The current UTC time as a compact name for a change or snapshot:
/// 20261202T170102Z.
std::string UtcStamp();

}  // namespace agent_init
