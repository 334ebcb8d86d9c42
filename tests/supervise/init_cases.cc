#include "init_cases.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "process/proc.h"

namespace agent_init::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kHangMs = 15000;  // a failure detector for hangs, not a performance bound

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void Pause(int ms) { std::this_thread::sleep_for(milliseconds(ms)); }

bool Alive(pid_t pid) {
  std::string stat = Slurp("/proc/" + std::to_string(pid) + "/stat");
  auto st = ParseProcStat(stat);
  return st && st->state != 'Z' && st->state != 'X';
}

std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> out;
  std::istringstream in(Slurp("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"));
  pid_t p;
  while (in >> p) out.push_back(p);
  return out;
}

std::string ExeOf(pid_t pid) {
  char buf[4096] = {};
  ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// Processes (host view) whose command line mentions `text`.
std::vector<pid_t> ProcessesMentioning(const std::string& text) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  while (struct dirent* e = d ? ::readdir(d) : nullptr) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    std::string cmd = Slurp(std::string("/proc/") + e->d_name + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    pid_t pid = std::atoi(e->d_name);
    if (cmd.find(text) != std::string::npos && pid != ::getpid() && Alive(pid)) out.push_back(pid);
  }
  if (d) ::closedir(d);
  return out;
}

size_t ZombiesOf(pid_t parent) {
  size_t n = 0;
  DIR* d = ::opendir("/proc");
  while (struct dirent* e = d ? ::readdir(d) : nullptr) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    auto st = ParseProcStat(Slurp(std::string("/proc/") + e->d_name + "/stat"));
    if (st && st->ppid == parent && st->state == 'Z') ++n;
  }
  if (d) ::closedir(d);
  return n;
}

struct LaunchOptions {
  bool ignore_chld = false;
  std::vector<int> ignore;
  std::vector<int> block;
  bool extra_fd = false;  // an inherited fd 9 the init should not keep
  int tty = -1;           // a pty slave to make the controlling terminal
};

struct Launched {
  pid_t outer = -1;  // our child: the init, or unshare in front of it
  pid_t init = -1;   // the init's pid as this test sees it
  std::string out, err;
  bool finished = false;
  int status = -1;
};

Launched Launch(const InitFlavour& f, const std::vector<std::string>& command, const LaunchOptions& o = {}) {
  Launched l;
  static int counter = 0;
  std::string base = f.workdir + "/run" + std::to_string(++counter);
  l.out = base + ".out";
  l.err = base + ".err";
  std::vector<std::string> argv;
  if (f.pid1) argv = {"/usr/bin/unshare", "--pid", "--fork", "--mount-proc"};
  if (o.ignore_chld || !o.ignore.empty() || !o.block.empty()) {
    // Set right in front of the init (unshare would reset SIGCHLD).
    auto list = [](std::vector<int> sigs) {
      std::string out;
      for (int s : sigs) out += (out.empty() ? "" : ",") + std::to_string(s);
      return out.empty() ? std::string("-") : out;
    };
    std::vector<int> ignored = o.ignore;
    if (o.ignore_chld) ignored.push_back(SIGCHLD);
    argv.insert(argv.end(), {SigprobePath(), "with", list(ignored), list(o.block), "--"});
  }
  argv.insert(argv.end(), f.prefix.begin(), f.prefix.end());
  argv.insert(argv.end(), command.begin(), command.end());
  pid_t pid = ::fork();
  if (pid == 0) {
    if (o.tty >= 0) {
      ::setsid();
      ::ioctl(o.tty, TIOCSCTTY, 0);
      ::dup2(o.tty, 0);
      ::dup2(o.tty, 1);
      ::dup2(o.tty, 2);
    } else {
      int in = ::open("/dev/null", O_RDONLY);
      ::dup2(in, 0);
      int out = ::open(l.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = ::open(l.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::dup2(err, 2);
    }
    if (o.extra_fd) {
      int fd = ::open((f.workdir + "/inherited").c_str(), O_WRONLY | O_CREAT, 0644);
      ::dup2(fd, 9);
    }
    for (int fd = 3; fd < 1024; ++fd) {
      if (fd != 9 || !o.extra_fd) ::close(fd);
    }
    // A clean start whatever ran us (a background shell ignores SIGINT and
    // SIGQUIT): default dispositions, nothing blocked; the case's own
    // settings are applied right in front of the init (sigprobe with).
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  l.outer = pid;
  l.init = pid;
  if (f.pid1) {
    // The init is unshare's child once it has exec'd.
    std::string exe = f.prefix.front();
    for (int i = 0; i < 500; ++i) {
      auto kids = ChildrenOf(pid);
      if (!kids.empty() && ExeOf(kids.front()) == exe) {
        l.init = kids.front();
        break;
      }
      Pause(5);
    }
  }
  return l;
}

// Waits for the init to exit; kills everything after kHangMs and reports a hang.
int WaitExit(Launched& l, bool* hung = nullptr, int timeout_ms = kHangMs) {
  if (l.finished) return l.status;
  auto deadline = Clock::now() + milliseconds(timeout_ms);
  int status = 0;
  while (::waitpid(l.outer, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      if (hung) *hung = true;
      ::kill(l.init, SIGKILL);
      ::kill(l.outer, SIGKILL);
      ::waitpid(l.outer, &status, 0);
      l.finished = true;
      l.status = -1;
      return -1;
    }
    Pause(2);
  }
  l.finished = true;
  l.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return l.status;
}

// Kills whatever a case left behind (peers leave orphans running).
void Cleanup(const InitFlavour& f, Launched& l) {
  if (!l.finished) {
    ::kill(l.init, SIGKILL);
    ::kill(l.outer, SIGKILL);
    WaitExit(l, nullptr, 2000);
  }
  for (pid_t p : ProcessesMentioning(f.workdir)) ::kill(p, SIGKILL);
}

bool WaitFor(const std::function<bool()>& cond, int timeout_ms = 5000) {
  auto deadline = Clock::now() + milliseconds(timeout_ms);
  while (Clock::now() < deadline) {
    if (cond()) return true;
    Pause(2);
  }
  return cond();
}

std::vector<std::string> Lines(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(Slurp(path));
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

CaseResult Ok(std::string detail = "") { return {true, true, std::move(detail)}; }
CaseResult Bad(std::string detail) { return {true, false, std::move(detail)}; }
CaseResult NotApplicable(std::string detail) { return {false, false, std::move(detail)}; }

std::string Probe() { return SigprobePath(); }

// A recording probe, running and ready; the init is in `l`.
Launched StartRecorder(const InitFlavour& f, const std::string& file, std::vector<std::string> extra = {},
                       const LaunchOptions& o = {}) {
  std::vector<std::string> cmd{Probe(), "record", file};
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  Launched l = Launch(f, cmd, o);
  WaitFor([&] { return Slurp(file).starts_with("ready\n"); });
  return l;
}

// ---- the cases ----

CaseResult ExitCodes(const InitFlavour& f) {
  for (int n = 0; n <= 255; ++n) {
    Launched l = Launch(f, {Probe(), "exit", std::to_string(n)});
    bool hung = false;
    int got = WaitExit(l, &hung);
    Cleanup(f, l);
    if (hung) return Bad("hangs on exit " + std::to_string(n));
    if (got != n) return Bad("exit " + std::to_string(n) + " became " + std::to_string(got));
  }
  return Ok("0..255 passed through");
}

CaseResult SignalExitCodes(const InitFlavour& f) {
  std::string seen;
  for (auto [sig, want] : {std::pair{"KILL", 137}, std::pair{"TERM", 143}, std::pair{"HUP", 129}}) {
    Launched l = Launch(f, {Probe(), "raise", sig});
    int got = WaitExit(l);
    Cleanup(f, l);
    if (got != want) return Bad(std::string("killed by SIG") + sig + ": " + std::to_string(got));
  }
  return Ok("137, 143, 129");
}

CaseResult ExecFailures(const InitFlavour& f) {
  std::string missing = f.workdir + "/no-such-program";
  Launched l = Launch(f, {missing});
  int got = WaitExit(l);
  std::string err = Slurp(l.err);
  Cleanup(f, l);
  std::string plain = f.workdir + "/not-executable";
  std::ofstream(plain) << "data";
  Launched l2 = Launch(f, {plain});
  int got2 = WaitExit(l2);
  std::string err2 = Slurp(l2.err);
  Cleanup(f, l2);
  std::string detail = "not found: " + std::to_string(got) + ", not executable: " + std::to_string(got2);
  if (got != 127 || got2 != 126) return Bad(detail);
  if (err.find(missing) == std::string::npos || err2.find(plain) == std::string::npos) {
    return Bad(detail + ", the message does not name the program");
  }
  return Ok("127 / 126, program named");
}

CaseResult ForwardsEachSignalOnce(const InitFlavour& f) {
  std::string file = f.workdir + "/signals";
  const int done = SIGRTMIN + 5;
  Launched l = StartRecorder(f, file, {"--exit-on", std::to_string(done)});
  std::vector<int> sigs;
  for (int s = 1; s < 32; ++s) {
    if (s != SIGKILL && s != SIGSTOP && s != SIGCHLD) sigs.push_back(s);
  }
  sigs.push_back(SIGRTMIN + 3);
  std::string missed;
  size_t expect_lines = 1;
  for (int s : sigs) {
    ::kill(l.init, s);
    ++expect_lines;
    if (!WaitFor([&] { return Lines(file).size() >= expect_lines; }, 2000)) {
      missed += (missed.empty() ? "" : ",") + std::to_string(s);
      --expect_lines;
    }
  }
  Pause(200);  // a duplicate would arrive now
  ::kill(l.init, done);
  int got = WaitExit(l);
  auto lines = Lines(file);
  Cleanup(f, l);
  std::vector<std::string> want{"ready"};
  for (int s : sigs) want.push_back(std::to_string(s));
  want.push_back(std::to_string(done));
  if (!missed.empty()) return Bad("not forwarded: " + missed);
  if (lines != want) {
    std::string got_list;
    for (auto& x : lines) got_list += x + " ";
    return Bad("received " + got_list);
  }
  if (got != 0) return Bad("exit " + std::to_string(got));
  return Ok(std::to_string(sigs.size()) + " signals, each once");
}

CaseResult IgnoredTermKeepsRunning(const InitFlavour& f) {
  std::string file = f.workdir + "/term-ignored";
  Launched l = StartRecorder(f, file, {"--ignore", "TERM", "--exit-on", "USR1", "--exit-code", "5"});
  ::kill(l.init, SIGTERM);
  Pause(1000);
  bool init_alive = Alive(l.init);
  ::kill(l.init, SIGUSR1);
  int got = WaitExit(l);
  Cleanup(f, l);
  if (!init_alive)
    return Bad("init exited although the child ignored SIGTERM (exit " + std::to_string(got) + ")");
  if (got != 5) return Bad("exit " + std::to_string(got));
  return Ok("child kept running; init waited");
}

CaseResult OrphansReaped(const InitFlavour& f) {
  Launched l = Launch(f, {Probe(), "orphans", "100", "300", "2000", "0"});
  Pause(1200);  // the orphans exited at ~300 ms; the command lingers
  size_t zombies = ZombiesOf(l.init);
  int got = WaitExit(l);
  Cleanup(f, l);
  if (zombies != 0) return Bad(std::to_string(zombies) + " zombies left");
  if (got != 0) return Bad("exit " + std::to_string(got));
  return Ok("100 orphans reaped");
}

CaseResult BurstOfExits(const InitFlavour& f) {
  Launched l = Launch(f, {Probe(), "burst", "300", "42"});
  bool hung = false;
  int got = WaitExit(l, &hung);
  Cleanup(f, l);
  if (hung) return Bad("hung");
  if (got != 42) return Bad("exit " + std::to_string(got) + " instead of the command's 42");
  return Ok("main exit seen among 300");
}

// Started with SIGCHLD ignored, an init must still see its child exit; the
// child gets SIGCHLD ignored back, as the caller had it.
CaseResult InheritedSigchldIgnored(const InitFlavour& f) {
  LaunchOptions o;
  o.ignore_chld = true;
  Launched l = Launch(f, {Probe(), "masks"}, o);
  bool hung = false;
  int got = WaitExit(l, &hung, 5000);
  std::string out = Slurp(l.out);
  Cleanup(f, l);
  if (hung) return Bad("hangs");
  if (got != 0) return Bad("exit " + std::to_string(got));
  if (out.find("ignored 0000000000010000") == std::string::npos) {
    std::replace(out.begin(), out.end(), '\n', ' ');
    return Bad("no hang, but the child saw " + out);
  }
  return Ok("no hang; the child has SIGCHLD ignored, as the caller");
}

CaseResult InheritedMasks(const InitFlavour& f) {
  LaunchOptions o;
  o.ignore = {SIGUSR1};
  o.block = {SIGUSR2};
  Launched l = Launch(f, {Probe(), "masks"}, o);
  int got = WaitExit(l);
  std::string out = Slurp(l.out);
  Cleanup(f, l);
  // SIGUSR2 = 12 -> bit 11; SIGUSR1 = 10 -> bit 9
  const std::string want = "blocked 0000000000000800\nignored 0000000000000200\n";
  if (got != 0 || out != want) {
    std::string seen = out;
    std::replace(seen.begin(), seen.end(), '\n', ' ');
    return Bad("child saw " + seen);
  }
  return Ok("mask and ignored set exact");
}

CaseResult GraceShutdown(const InitFlavour& f) {
  Launched l = Launch(f, {Probe(), "tree", f.workdir, "3", "500"});
  bool hung = false;
  int got = WaitExit(l, &hung);
  bool a = !Slurp(f.workdir + "/A-handled").empty();
  bool c = !Slurp(f.workdir + "/C-handled").empty();
  Pause(100);
  size_t left = ProcessesMentioning(f.workdir + " 3 500").size();
  Cleanup(f, l);
  std::string detail = std::string("TERM handler ran: ") + (a ? "yes" : "no") +
                       ", setsid escapee's: " + (c ? "yes" : "no") +
                       ", left running: " + std::to_string(left) + ", exit " + std::to_string(got);
  if (hung || got != 3 || !a || !c || left != 0) return Bad(detail);
  return Ok(detail);
}

CaseResult TtyJobControl(const InitFlavour& f) {
  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || ::grantpt(master) < 0 || ::unlockpt(master) < 0) return Bad("no pty");
  int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  LaunchOptions o;
  o.tty = slave;
  Launched l = Launch(f, {Probe(), "tty"}, o);
  ::close(slave);
  std::string seen;
  auto deadline = Clock::now() + milliseconds(5000);
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  while (seen.find("foreground") == std::string::npos ||
         seen.find('\n', seen.find("foreground")) == std::string::npos) {
    char buf[256];
    ssize_t n = ::read(master, buf, sizeof buf);
    if (n > 0) seen.append(buf, static_cast<size_t>(n));
    if (Clock::now() > deadline) break;
    Pause(5);
  }
  bool fg = seen.find("foreground yes") != std::string::npos;
  (void)!::write(master, "\x03", 1);  // Ctrl-C
  int got = WaitExit(l, nullptr, 5000);
  ::close(master);
  Cleanup(f, l);
  std::string detail =
      std::string("foreground: ") + (fg ? "yes" : "no") + ", Ctrl-C exit " + std::to_string(got);
  if (!fg || got != 130) return Bad(detail);
  return Ok(detail);
}

CaseResult NoFdLeak(const InitFlavour& f) {
  std::string file = f.workdir + "/fds";
  LaunchOptions o;
  o.extra_fd = true;
  Launched l = StartRecorder(f, file, {"--exit-on", "USR1"}, o);
  // The child is ready once it runs, which may be before the init closed its
  // copies: a signal forwarded from the init's loop marks that it has.
  ::kill(l.init, SIGUSR2);
  WaitFor([&] { return Slurp(file).find("\n" + std::to_string(SIGUSR2) + "\n") != std::string::npos; });
  std::set<std::string> init_fds, child_fds;
  auto list = [](pid_t p, std::set<std::string>& out) {
    DIR* d = ::opendir(("/proc/" + std::to_string(p) + "/fd").c_str());
    while (struct dirent* e = d ? ::readdir(d) : nullptr) {
      if (e->d_name[0] != '.') out.insert(e->d_name);
    }
    if (d) ::closedir(d);
  };
  list(l.init, init_fds);
  auto kids = ChildrenOf(l.init);
  if (!kids.empty()) list(kids.front(), child_fds);
  ::kill(l.init, SIGUSR1);
  WaitExit(l);
  Cleanup(f, l);
  std::string fds;
  for (auto& x : init_fds) fds += x + " ";
  if (init_fds.count("9")) return Bad("init keeps the inherited fd 9 (fds: " + fds + ")");
  if (!child_fds.count("9")) return Bad("the child did not inherit fd 9");
  return Ok("init fds: " + fds);
}

CaseResult SignalMap(const InitFlavour& f) {
  if (!f.agent_init) return NotApplicable("no signal rewriting");
  std::string file = f.workdir + "/mapped";
  InitFlavour mapped = f;
  mapped.prefix.insert(mapped.prefix.end() - 1, {"--signal-map", "TERM:QUIT"});
  Launched l = StartRecorder(mapped, file, {"--exit-on", "QUIT", "--exit-code", "4"});
  ::kill(l.init, SIGTERM);
  int got = WaitExit(l);
  auto lines = Lines(file);
  Cleanup(f, l);
  if (got != 4 || lines.size() < 2 || lines[1] != std::to_string(SIGQUIT))
    return Bad("exit " + std::to_string(got));
  return Ok("TERM arrived as QUIT");
}

CaseResult SignalGroup(const InitFlavour& f) {
  if (!f.agent_init) return NotApplicable("tested for agent-init's --signal-group");
  InitFlavour grouped = f;
  grouped.prefix.insert(grouped.prefix.end() - 1, "--signal-group");
  std::string a = f.workdir + "/group-a", b = f.workdir + "/group-b";
  Launched l = Launch(grouped, {"/bin/sh", "-c",
                                Probe() + " record " + a + " --exit-on USR1 & exec " + Probe() + " record " +
                                    b + " --exit-on USR1"});
  WaitFor([&] { return Slurp(a).starts_with("ready") && Slurp(b).starts_with("ready"); });
  ::kill(l.init, SIGUSR1);
  int got = WaitExit(l);
  bool both = Lines(a).size() == 2 && Lines(b).size() == 2;
  Cleanup(f, l);
  if (!both || got != 0) return Bad("the group did not get the signal (exit " + std::to_string(got) + ")");
  return Ok("whole group signalled");
}

}  // namespace

std::string SigprobePath() {
  const char* env = std::getenv("SIGPROBE");
  return env ? env : SIGPROBE_BINARY;
}

const std::vector<InitCase>& AllCases() {
  static const std::vector<InitCase> cases{
      {"exit_codes", "exit codes 0..255 passed through", ExitCodes},
      {"signal_exit_codes", "killed by signal N -> 128+N (137, 143, 129)", SignalExitCodes},
      {"exec_failures", "not found 127, not executable 126, program named", ExecFailures},
      {"forward_each_signal_once", "every catchable signal and SIGRTMIN+3 forwarded exactly once",
       ForwardsEachSignalOnce},
      {"ignored_term", "child ignoring SIGTERM keeps running, init waits", IgnoredTermKeepsRunning},
      {"orphans_reaped", "100 orphans that exit later leave no zombie", OrphansReaped},
      {"burst_of_exits", "300 simultaneous exits do not hide the command's exit", BurstOfExits},
      {"inherited_sigchld_ignored", "started with SIGCHLD ignored: no hang, and the child gets it ignored",
       InheritedSigchldIgnored},
      {"inherited_masks", "child gets the caller's blocked and ignored signals exactly", InheritedMasks},
      {"grace_shutdown",
       "after the command exits: TERM to descendants (setsid escapees too), KILL after grace", GraceShutdown},
      {"tty_job_control", "under a TTY the child is the foreground; Ctrl-C gives 130", TtyJobControl},
      {"no_fd_leak", "init keeps no inherited fd after spawning; the child gets them", NoFdLeak},
      {"signal_map", "--signal-map TERM:QUIT rewrites before forwarding", SignalMap},
      {"signal_group", "--signal-group signals the child's process group", SignalGroup},
  };
  return cases;
}

}  // namespace agent_init::test
