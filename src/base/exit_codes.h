// The documented exit codes: one table that ExitCodeFor(), the --help text
// and README's table (checked by a test) all come from.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"

namespace agent_init {

struct ExitCode {
  int code;
  std::optional<Kind> kind;  // the failure class it reports; none for 0 and 128+N
  std::string_view meaning;  // as README says it (Markdown)
  bool plus_signal = false;  // the code is `code` plus a signal's number
};

/// The code as README and --help show it: "75", "128+N".
inline std::string ExitCodeText(const ExitCode& e) {
  return std::to_string(e.code) + (e.plus_signal ? "+N" : "");
}

inline constexpr std::array<ExitCode, 10> kExitCodes = {{
    {0, std::nullopt, "ready (`prepare`; `inspect` found no problem)"},
    {64, Kind::kUsage,
     "bad usage: unknown option, bad value, no command; `restore` of a snapshot that does not exist; "
     "`--user \"\"` or `AGENT_INIT_USER=` set empty; a uid or gid past 4294967294"},
    {65, Kind::kLayout,
     "the home's layout is missing, ambiguous or broken; an executable place is `noexec` or on the volume; a "
     "FIFO or device where agent-init expects a directory or file; a journal, history or layout record "
     "agent-init cannot read; the agent's state in both layouts' run directories, differing (after a layout "
     "change); a `VH/run` symlink that points at the volume, above or inside it, or at the versioned "
     "home; `eject` for an image that runs `elastic-agent run`, or a volume that fails eject's check; (state "
     "layout) `STATE_PATH` set to another directory than `--state`, a `STATE/data/.installed` "
     "marker, or 7.x install and temp directories on different mounts"},
    {67, Kind::kNoUser,
     "`--user` names a user or group that does not exist (nothing is touched, nothing runs)"},
    {73, Kind::kCannotPlace,
     "the run directory could not be put in place: the state volume is missing or mounted read-only, the "
     "root "
     "filesystem is read-only and mounting is not permitted, `--method bind` without permission, I/O errors; "
     "(run layout) the agent's home is read-only, where the agent saves its ID, and mounting is not permitted"},
    {75, Kind::kBusy,
     "temporarily unavailable: another instance holds the volume past `--lock-timeout`; `restore` or `eject` "
     "while the agent runs"},
    {77, Kind::kDenied,
     "permission denied, or refused for safety (a symlink planted in the volume, also under `snapshots/` for "
     "`restore`; a file with several names, hard links, where agent-init writes, copies or hands over; an "
     "entry swapped while agent-init opened it); `--user` without root; "
     "agent-init started as a user that may not write the volume or the image (the message names the ids, "
     "the "
     "owner, the mode and the fix); agent-init started setuid"},
    {126, Kind::kNotExecutable, "the command exists but cannot be executed (named in the message)"},
    {127, Kind::kNotFound, "the command was not found (named in the message)"},
    {128,
     std::nullopt,
     "signal N (143 for SIGTERM, 130 for SIGINT) stopped agent-init before the command started: while it "
     "waited for the volume's lock, or while it prepared the volume (which it finishes first: the volume is "
     "left consistent); the command does not run. With `--supervise`, once the command runs, the status "
     "of a command killed by signal N",
     true},
}};

// ExitCodeFor looks the table up, so no switch lets -Wswitch notice a new
// Kind without a code: this does.
constexpr bool EveryKindHasOneCode() {
  for (int k = 0; k < kKindCount; ++k) {
    int rows = 0;
    for (const ExitCode& e : kExitCodes) rows += e.kind == static_cast<Kind>(k);
    if (rows != 1) return false;
  }
  int without_kind = 0;
  for (const ExitCode& e : kExitCodes) without_kind += !e.kind.has_value();
  return without_kind == 2 && kExitCodes.size() == static_cast<size_t>(kKindCount) + 2;
}
static_assert(EveryKindHasOneCode(), "every Kind needs exactly one row in kExitCodes");

/// The table as --help prints it: one entry per code, wrapped to `width`
/// columns, without Markdown.
std::string ExitCodeHelp(size_t width = 100);

}  // namespace agent_init
