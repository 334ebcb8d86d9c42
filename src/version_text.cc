#include "version_text.h"

#include <libmount/libmount.h>

#include "version.h"

namespace agent_init {

std::string VersionText() {
  const char* libmount = nullptr;
  ::mnt_get_library_version(&libmount);
  std::string text = "agent-init " AGENT_INIT_VERSION "\ncommit " AGENT_INIT_COMMIT "\nlibmount ";
  text += libmount ? libmount : "unknown";
  const std::string util_linux = AGENT_INIT_UTIL_LINUX;
  text += util_linux.empty() ? " (shared library)" : " (static, from util-linux " + util_linux + ")";
  return text;
}

}  // namespace agent_init
