#include "config.h"

#include "base/enum_names.h"

namespace agent_init {

std::string_view ModeName(Mode mode) {
  static constexpr EnumName<Mode> kNames[] = {
      {Mode::kExec, "exec"},       {Mode::kSupervise, "supervise"}, {Mode::kPrepare, "prepare"},
      {Mode::kInspect, "inspect"}, {Mode::kRestore, "restore"},     {Mode::kEject, "eject"},
  };
  return NameOf(mode, kNames);
}

std::string_view LayoutName(Layout layout) { return layout == Layout::kState ? "state" : "run"; }

}  // namespace agent_init
