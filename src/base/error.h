// One error type for the whole library: what failed, why (errno), and which
// documented exit code it maps to. Errors are built where they happen and
// wrapped with context on the way up; cmd/ prints them once.
#pragma once

#include <cerrno>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace agent_init {

/// The documented failure classes. Each maps to exactly one exit code in
/// the table of base/exit_codes.h.
enum class Kind {
  kUsage,          // 64: bad command line or option value
  kLayout,         // 65: home layout missing, ambiguous, broken, or unsafe to use
  kNoUser,         // 67: --user names a user or group that does not exist
  kCannotPlace,    // 73: run directory (or other state) could not be put in place
  kBusy,           // 75: another instance holds the volume
  kDenied,         // 77: permission denied, or refused for safety
  kNotExecutable,  // 126: the command exists but cannot be executed
  kNotFound,       // 127: the command was not found (keep it last: kKindCount)
};
inline constexpr int kKindCount = static_cast<int>(Kind::kNotFound) + 1;

/// The exit code that reports `kind` (the table in base/exit_codes.h).
int ExitCodeFor(Kind kind) noexcept;

/// A failure: its class, the errno that caused it (0 when none), a message that
/// names the path ("open `/state/run`: permission denied") and an optional hint
/// telling the operator what to do.
struct Error {
  Kind kind = Kind::kCannotPlace;
  int err = 0;
  std::string msg;
  std::string hint;
  std::vector<std::string> also;  // further problems the same check found, reported before this one
  int stopped_by = 0;  // the signal that stopped the start before the command ran: exit 128 + it
};

template <class T>
using Result = std::expected<T, Error>;

/// Builds an error; when `err` is non-zero its strerror text is appended.
Error MakeError(Kind kind, int err, std::string msg, std::string hint = {});

/// Prefixes `context` to the message: "prepare: " + "open `x`: ...".
Error Wrap(Error e, std::string_view context);

/// The natural class for a failed system call: EACCES/EPERM -> kDenied,
/// everything else -> `fallback`.
Kind KindForErrno(int err, Kind fallback = Kind::kCannotPlace) noexcept;

/// Shorthand for `std::unexpected(MakeError(...))` after a failed system call;
/// the caller passes errno captured on the very next line.
inline std::unexpected<Error> SysFail(int err, std::string msg, Kind fallback = Kind::kCannotPlace,
                                      std::string hint = {}) {
  return std::unexpected(MakeError(KindForErrno(err, fallback), err, std::move(msg), std::move(hint)));
}

inline std::unexpected<Error> Fail(Kind kind, std::string msg, std::string hint = {}) {
  return std::unexpected(MakeError(kind, 0, std::move(msg), std::move(hint)));
}

/// Quotes a path for messages the same way everywhere: `path`.
std::string Q(std::string_view path);

}  // namespace agent_init
