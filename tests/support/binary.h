// Running the agent-init binary under test (the dev build, which honours the
// fault-injection switch).
#pragma once

#include <string>
#include <vector>

#include "temp_dir.h"

namespace agent_init::test {

/// The path of the agent-init binary under test.
std::string AgentInitBinary();

/// Runs agent-init with `args` (and extra "K=V" environment).
RunResult AgentInit(std::vector<std::string> args, const std::vector<std::string>& env = {});

/// The same as another user (the caller must be root).
RunResult AgentInitAs(const RunAsUser& as, std::vector<std::string> args, const std::vector<std::string>& env = {});

bool Contains(const std::string& haystack, const std::string& needle);

}  // namespace agent_init::test
