#include "binary.h"

namespace agent_init::test {

std::string AgentInitBinary() { return AGENT_INIT_BINARY; }

RunResult AgentInit(std::vector<std::string> args, const std::vector<std::string>& env) {
  args.insert(args.begin(), AgentInitBinary());
  return Run(args, env);
}

RunResult AgentInitAs(const RunAsUser& as, std::vector<std::string> args, const std::vector<std::string>& env) {
  args.insert(args.begin(), AgentInitBinary());
  return RunAs(as, args, env);
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace agent_init::test
