// The release binary is static: libstdc++'s verbose terminate handler would
// link in the whole C++ demangler (~50 KB) to print the type of an uncaught
// exception. agent-init lets no exception escape (src/ returns errors, main
// catches CLI11's), so a plain abort with a one-line message is enough.
#include <cstdio>
#include <cstdlib>

namespace __gnu_cxx {

void __verbose_terminate_handler() {
  std::fputs("agent-init: internal error: terminate called\n", stderr);
  std::abort();
}

}  // namespace __gnu_cxx
