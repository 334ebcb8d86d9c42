#include "process/signals.h"

#include <signal.h>

#include <cstring>

namespace agent_init {
namespace {

struct Named {
  const char* name;
  int sig;
};

constexpr Named kSignals[] = {
    {"HUP", SIGHUP},       {"INT", SIGINT},   {"QUIT", SIGQUIT},   {"ILL", SIGILL},   {"TRAP", SIGTRAP},
    {"ABRT", SIGABRT},     {"BUS", SIGBUS},   {"FPE", SIGFPE},     {"KILL", SIGKILL}, {"USR1", SIGUSR1},
    {"SEGV", SIGSEGV},     {"USR2", SIGUSR2}, {"PIPE", SIGPIPE},   {"ALRM", SIGALRM}, {"TERM", SIGTERM},
    {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD}, {"CONT", SIGCONT},   {"STOP", SIGSTOP}, {"TSTP", SIGTSTP},
    {"TTIN", SIGTTIN},     {"TTOU", SIGTTOU}, {"URG", SIGURG},     {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ},
    {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},     {"PWR", SIGPWR},
    {"SYS", SIGSYS},
};

std::string Upper(std::string_view text) {
  std::string upper;
  for (char c : text) upper += static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  return upper;
}

std::optional<int> ParseNumber(std::string_view s) {
  if (s.empty() || s.size() > 3) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

std::optional<int> ParseSignal(std::string_view text) {
  if (auto n = ParseNumber(text)) {
    // 32 and 33 lie between SIGSYS and SIGRTMIN: glibc's own, not ours to send.
    if ((*n >= 1 && *n <= 31) || (*n >= SIGRTMIN && *n <= SIGRTMAX)) return n;
    return std::nullopt;
  }
  std::string upper = Upper(text);
  std::string_view s = upper;
  if (s.starts_with("SIG")) s.remove_prefix(3);
  for (const auto& n : kSignals) {
    if (s == n.name) return n.sig;
  }
  for (auto [prefix, base] : {std::pair<std::string_view, int>{"RTMIN", SIGRTMIN}, {"RTMAX", SIGRTMAX}}) {
    if (!s.starts_with(prefix)) continue;
    std::string_view rest = s.substr(prefix.size());
    int sig = base;
    if (!rest.empty()) {
      auto off = ParseNumber(rest.substr(1));
      if (!off || (rest[0] != '+' && rest[0] != '-')) return std::nullopt;
      sig = rest[0] == '+' ? base + *off : base - *off;
    }
    if (sig >= SIGRTMIN && sig <= SIGRTMAX) return sig;
    return std::nullopt;
  }
  return std::nullopt;
}

std::string SignalName(int sig) {
  for (const auto& n : kSignals) {
    if (n.sig == sig) return std::string("SIG") + n.name;
  }
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
    return sig == SIGRTMIN ? "SIGRTMIN" : "SIGRTMIN+" + std::to_string(sig - SIGRTMIN);
  }
  return std::to_string(sig);
}

namespace {

// One side of FROM:TO; `drop` admits 0 and IGN (TO only).
Result<int> MapSide(const std::string& spec, std::string_view text, bool drop) {
  std::string upper = Upper(text);
  auto n = ParseNumber(text);
  if (drop && ((n && *n == 0) || upper == "IGN" || upper == "SIG_IGN")) return 0;
  if (auto sig = ParseSignal(text)) return *sig;
  std::string why = Q(std::string(text)) + " is not a signal name or number";
  if (n && *n > 31 && *n < SIGRTMIN) {
    why = std::to_string(*n) + " is reserved by the C library for its threads";
  } else if (n && *n == 0) {
    why = "0 (drop) is a TO only";
  } else if (text.empty()) {
    why = std::string(drop ? "TO" : "FROM") + " is empty";
  }
  return Fail(Kind::kUsage, "--signal-map " + Q(spec) + ": " + why,
              "signals are 1-31 and SIGRTMIN..SIGRTMAX (" + std::to_string(SIGRTMIN) + "-" +
                  std::to_string(SIGRTMAX) +
                  "), by name (TERM, SIGRTMIN+3) or number; TO 0 or IGN drops FROM, e.g. --signal-map HUP:0");
}

}  // namespace

Result<std::map<int, int>> ParseSignalMap(const std::vector<std::string>& specs) {
  std::map<int, int> out;
  for (const auto& spec : specs) {
    size_t colon = spec.find(':');
    if (colon == std::string::npos) {
      return Fail(Kind::kUsage, "--signal-map " + Q(spec) + ": expected FROM:TO with signal names or numbers",
                  "for example --signal-map TERM:QUIT, or --signal-map HUP:0 to drop SIGHUP");
    }
    auto from = MapSide(spec, std::string_view(spec).substr(0, colon), /*drop=*/false);
    if (!from) return std::unexpected(from.error());
    auto to = MapSide(spec, std::string_view(spec).substr(colon + 1), /*drop=*/true);
    if (!to) return std::unexpected(to.error());
    if (*from == SIGKILL || *from == SIGSTOP || *from == SIGCHLD) {
      return Fail(Kind::kUsage,
                  "--signal-map " + Q(spec) + ": " + SignalName(*from) + " cannot be rewritten");
    }
    out[*from] = *to;
  }
  return out;
}

}  // namespace agent_init
