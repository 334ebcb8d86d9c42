// --user against /etc/passwd and /etc/group of an image: the input is
// "spec\0passwd\0group".
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "process/users.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t a = in.find('\0');
  std::string_view spec = in.substr(0, a);
  std::string_view rest = a == std::string_view::npos ? std::string_view{} : in.substr(a + 1);
  size_t b = rest.find('\0');
  std::string_view passwd = rest.substr(0, b);
  std::string_view group = b == std::string_view::npos ? std::string_view{} : rest.substr(b + 1);
  (void)agent_init::ParsePasswdLine(in);
  (void)agent_init::ParseGroupLine(in);
  auto creds = agent_init::ResolveUser(spec, passwd, group);
  if (creds && creds->uid == 0) {
    // Never root by accident: uid 0 only when the spec says 0 or names a
    // user whose passwd entry says 0.
    std::string_view user = spec.substr(0, spec.find(':'));
    bool named_root = false;
    for (std::string_view rest = passwd; !rest.empty();) {
      size_t nl = rest.find('\n');
      auto entry = agent_init::ParsePasswdLine(rest.substr(0, nl));
      if (entry && entry->name == user && entry->uid == 0) named_root = true;
      rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    }
    if (agent_init::ParseId(user) != 0u && !named_root) __builtin_trap();
  }
  return 0;
}
