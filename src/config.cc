#include "config.h"

namespace agent_init {

std::string_view ModeName(Mode mode) {
  switch (mode) {
    case Mode::kExec:
      return "exec";
    case Mode::kSupervise:
      return "supervise";
    case Mode::kPrepare:
      return "prepare";
    case Mode::kInspect:
      return "inspect";
    case Mode::kRestore:
      return "restore";
  }
  return "exec";
}

std::string_view LayoutName(Layout layout) { return layout == Layout::kState ? "state" : "run"; }

}  // namespace agent_init
