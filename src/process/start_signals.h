// agent-init's signals from its first instruction until the command starts.
// As PID 1 the kernel drops every signal that has no handler, so a SIGTERM
// (docker stop, a pod's deletion) while agent-init waited for the volume did
// nothing, and the stop always ended in SIGKILL. main blocks every
// asynchronous signal first, as tini does: nothing is lost, nothing runs in
// a handler. The lock wait wakes on SIGTERM and SIGINT (a signalfd); after
// prepare, one that came meanwhile stops the start with 128+N before the
// command runs. The command gets the caller's mask and SIGCHLD disposition.
#pragma once

#include <signal.h>

namespace agent_init {

/// What the process that started agent-init left it with, for the command.
struct CallerSignals {
  sigset_t mask{};
  bool chld_ignored = false;  // SIGCHLD was SIG_IGN
};

/// Blocks every signal but the synchronous ones (SIGSEGV, SIGBUS, SIGFPE,
/// SIGILL, SIGTRAP, SIGSYS, SIGABRT: a fault still kills, or reaches a
/// sanitizer) and the terminal's SIGTTIN and SIGTTOU. Returns what it found.
CallerSignals BlockSignals();

/// Puts the caller's mask and SIGCHLD disposition back: before the exec.
void RestoreSignals(const CallerSignals& caller);

/// The signals that stop a start before the command runs: SIGTERM, SIGINT.
sigset_t StopSignals();

/// A stop signal that arrived while blocked, taken from the pending set:
/// its number, or 0 when none did.
int TakeStopSignal();

}  // namespace agent_init
