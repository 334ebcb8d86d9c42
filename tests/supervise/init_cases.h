// The supervisor's acceptance cases, written once and run against any init:
// agent-init --supervise (asserted by tests/ns/supervise_ns_test.cc, as PID 1
// of a fresh PID namespace and as a subreaper) and tini, dumb-init and
// catatonit (tabulated by init_compare for README).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace agent_init::test {

/// How to start one init in front of a command.
struct InitFlavour {
  std::string name;
  std::vector<std::string> prefix;    // argv before the command
  bool pid1 = false;                  // PID 1 of a fresh PID namespace with its own /proc
  bool agent_init = false;            // supports --signal-map and --grace
  std::vector<std::string> drop_hup;  // options (before the prefix's last word) that drop SIGHUP, if any
  std::string workdir;                // a private temporary directory for the case
};

struct CaseResult {
  bool applies = true;  // false: the init has no such feature
  bool ok = false;
  std::string detail;  // what was observed, for the table or the failure message
};

struct InitCase {
  const char* name;
  const char* what;  // one line for the table
  std::function<CaseResult(const InitFlavour&)> run;
};

/// All cases, in a stable order.
const std::vector<InitCase>& AllCases();

/// Like fork, but with `pid1` the child is PID 1 of a new PID namespace
/// with its own /proc (and a private mount namespace). -1 on failure.
pid_t ForkInit(bool pid1);

/// The sigprobe binary.
std::string SigprobePath();

}  // namespace agent_init::test
