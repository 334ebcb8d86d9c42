#include "base/log.h"

#include <spdlog/logger.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <memory>

#include "base/json.h"

namespace agent_init::log {
namespace {

struct State {
  Format format = Format::kText;
  Level level = Level::kInfo;
  std::shared_ptr<spdlog::logger> logger;
};

spdlog::level::level_enum ToSpd(Level level) {
  switch (level) {
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarn:
      return spdlog::level::warn;
    case Level::kError:
      return spdlog::level::err;
    case Level::kOff:
      return spdlog::level::off;
  }
  return spdlog::level::info;
}

std::shared_ptr<spdlog::logger> MakeLogger(Format format, Level level) {
  // Single-threaded sink: agent-init never logs from two threads, and the
  // supervisor handles signals synchronously, never in a handler.
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_st>();
  auto logger = std::make_shared<spdlog::logger>("agent-init", std::move(sink));
  const char* pattern = format == Format::kJson
                            ? R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","pid":%P,%v})"
                            : "%Y-%m-%dT%H:%M:%S.%eZ agent-init[%P] %l: %v";
  logger->set_formatter(std::make_unique<spdlog::pattern_formatter>(pattern, spdlog::pattern_time_type::utc));
  logger->set_level(ToSpd(level));
  logger->flush_on(spdlog::level::trace);
  return logger;
}

State& Get() {
  static State state{Format::kText, Level::kInfo, MakeLogger(Format::kText, Level::kInfo)};
  return state;
}

// Text values are printed bare when they are simple, quoted otherwise.
void AppendTextValue(std::string& out, std::string_view value) {
  bool plain = !value.empty();
  for (unsigned char c : value) {
    if (c <= ' ' || c == '"' || c == '\\' || c == 0x7f) {
      plain = false;
      break;
    }
  }
  if (plain) {
    out += value;
  } else {
    AppendJsonString(out, value);
  }
}

}  // namespace

void Init(Format format, Level level) {
  State& state = Get();
  state.format = format;
  state.level = level;
  state.logger = MakeLogger(format, level);
}

bool Enabled(Level level) { return level >= Get().level && level != Level::kOff; }

void Write(Level level, std::string_view message, Fields fields) {
  if (!Enabled(level)) return;
  State& state = Get();
  std::string line;
  if (state.format == Format::kJson) {
    line += "\"message\":";
    AppendJsonString(line, message);
    for (const Field& f : fields) {
      line += ',';
      AppendJsonString(line, f.key);
      line += ':';
      AppendJsonString(line, f.value);
    }
  } else {
    line += message;
    for (const Field& f : fields) {
      line += ' ';
      line += f.key;
      line += '=';
      AppendTextValue(line, f.value);
    }
  }
  state.logger->log(ToSpd(level), spdlog::string_view_t(line.data(), line.size()));
}

void Flush() { Get().logger->flush(); }

}  // namespace agent_init::log
