// The static release binary must not use NSS (getpwnam and friends dlopen
// modules at run time and fail in images without them). agent-init parses
// /etc/passwd and /etc/group itself (src/process/users.h); libmount only calls these
// for mount options with user names (uid=NAME), which agent-init never
// builds. The linker redirects libmount's calls here (-Wl,--wrap), which
// also keeps glibc's whole NSS machinery out of the binary.
#include <grp.h>
#include <pwd.h>
#include <cerrno>

extern "C" {

int __wrap_getpwnam_r(const char*, struct passwd*, char*, size_t, struct passwd** result) {
  *result = nullptr;
  return ENOENT;
}

int __wrap_getpwuid_r(uid_t, struct passwd*, char*, size_t, struct passwd** result) {
  *result = nullptr;
  return ENOENT;
}

int __wrap_getgrnam_r(const char*, struct group*, char*, size_t, struct group** result) {
  *result = nullptr;
  return ENOENT;
}

}  // extern "C"
