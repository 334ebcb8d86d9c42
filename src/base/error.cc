#include "base/error.h"

#include <cstring>

namespace agent_init {

Error MakeError(Kind kind, int err, std::string msg, std::string hint) {
  if (err != 0) {
    msg += ": ";
    msg += std::strerror(err);
  }
  return Error{kind, err, std::move(msg), std::move(hint), {}};
}

Error Wrap(Error e, std::string_view context) {
  std::string msg(context);
  msg += ": ";
  msg += e.msg;
  e.msg = std::move(msg);
  return e;
}

Kind KindForErrno(int err, Kind fallback) noexcept {
  if (err == EACCES || err == EPERM) return Kind::kDenied;
  return fallback;
}

std::string Q(std::string_view path) {
  std::string out;
  out.reserve(path.size() + 2);
  out += '`';
  // Paths come from an untrusted volume: keep control bytes out of the log.
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '`';
  return out;
}

}  // namespace agent_init
