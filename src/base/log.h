// Logging to stderr (stdout belongs to the agent), as text for people or as
// one JSON object per line for log collectors. Messages carry structured
// fields so that both formats show the same facts.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace agent_init::log {

enum class Level { kDebug, kInfo, kWarn, kError, kOff };
enum class Format { kText, kJson };

struct Field {
  std::string_view key;
  std::string value;
};
using Fields = std::initializer_list<Field>;

/// Configures the process-wide logger. Without a call, logs are text at info.
void Init(Format format, Level level);

/// True when messages at `level` are written.
bool Enabled(Level level);

void Write(Level level, std::string_view message, Fields fields = {});

inline void Debug(std::string_view m, Fields f = {}) { Write(Level::kDebug, m, f); }
inline void Info(std::string_view m, Fields f = {}) { Write(Level::kInfo, m, f); }
inline void Warn(std::string_view m, Fields f = {}) { Write(Level::kWarn, m, f); }
inline void Error(std::string_view m, Fields f = {}) { Write(Level::kError, m, f); }

/// Flushes pending output; call before exec.
void Flush();

}  // namespace agent_init::log
