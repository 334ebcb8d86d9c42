#include "init_cases.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
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

#include "base/unique_fd.h"
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
  std::string shell;      // with tty: a job-control shell's stand-in runs the init, reporting here
};

struct Launched {
  pid_t init = -1;  // our child, the init (PID 1 of its own namespace, or a subreaper)
  UniqueFd pidfd;   // readable once the init exited: every wait is on this event
  std::string out, err;
  bool finished = false;
  int status = -1;
};

// Milliseconds left until `deadline`, for poll(2).
int Left(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<long long>(ms, 0));
}

Launched Launch(const InitFlavour& f, const std::vector<std::string>& command, const LaunchOptions& o = {}) {
  Launched l;
  static int counter = 0;
  std::string base = f.workdir + "/run" + std::to_string(++counter);
  l.out = base + ".out";
  l.err = base + ".err";
  std::vector<std::string> argv;
  if (!o.shell.empty()) argv.insert(argv.end(), {SigprobePath(), "shell", o.shell, "--"});
  if (o.ignore_chld || !o.ignore.empty() || !o.block.empty()) {
    // Set right in front of the init.
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
  pid_t pid = ForkInit(f.pid1);
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
  // A failed start must not leave -1 as the init's pid: every case signals
  // it, and kill(-1, ...) reaches every process on the machine.
  if (pid < 0) {
    std::perror(f.pid1 ? "init_cases: unshare(CLONE_NEWPID) and fork" : "init_cases: fork");
    std::abort();
  }
  l.init = pid;
  l.pidfd = UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!l.pidfd.valid()) {
    std::perror("init_cases: pidfd_open");
    ::kill(pid, SIGKILL);
    std::abort();
  }
  return l;
}

// True once the init has exited (not yet reaped), waiting up to timeout_ms.
bool ExitsWithin(const Launched& l, int timeout_ms) {
  struct pollfd p {
    l.pidfd.get(), POLLIN, 0
  };
  int n;
  while ((n = ::poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  return n == 1;
}

// Waits for the init to exit; kills it after timeout_ms and reports a hang.
int WaitExit(Launched& l, bool* hung = nullptr, int timeout_ms = kHangMs) {
  if (l.finished) return l.status;
  bool timed_out = !ExitsWithin(l, timeout_ms);
  if (timed_out) {
    if (hung) *hung = true;
    ::kill(l.init, SIGKILL);
  }
  int status = 0;
  while (::waitpid(l.init, &status, 0) < 0 && errno == EINTR) {
  }
  l.finished = true;
  if (timed_out) return l.status = -1;  // not the SIGKILL's 137: a hang is no exit code
  l.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return l.status;
}

// Kills whatever a case left behind (peers leave orphans running).
void Cleanup(const InitFlavour& f, Launched& l) {
  if (!l.finished) {
    ::kill(l.init, SIGKILL);
    WaitExit(l, nullptr, 2000);
  }
  for (pid_t p : ProcessesMentioning(f.workdir)) ::kill(p, SIGKILL);
}

// Waits until `cond`, which looks at files in `dir`, holds: re-checked on
// every change inotify reports there, never on a timer.
bool WaitFor(const std::string& dir, const std::function<bool()>& cond, int timeout_ms = 5000) {
  auto deadline = Clock::now() + milliseconds(timeout_ms);
  UniqueFd in(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  if (in.valid() &&
      ::inotify_add_watch(in.get(), dir.c_str(), IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO) < 0)
    in.reset();
  for (;;) {
    if (cond()) return true;
    if (!in.valid()) {
      // No inotify instance left (parallel ctest can use up the per-user
      // limit): look again every 10 ms rather than wait out the timeout.
      if (Left(deadline) == 0) return false;
      ::poll(nullptr, 0, std::min(10, Left(deadline)));
      continue;
    }
    struct pollfd p {
      in.get(), POLLIN, 0
    };
    if (::poll(&p, 1, Left(deadline)) <= 0) return cond();
    char events[4096];
    while (::read(in.get(), events, sizeof events) > 0) {
    }
  }
}

// Waits for a child of ours to stop, on its SIGCHLD (which must be
// blocked); the stop stays reportable (WNOWAIT).
bool WaitStopped(pid_t pid, int timeout_ms) {
  auto deadline = Clock::now() + milliseconds(timeout_ms);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WSTOPPED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid)
      return true;
    int left = Left(deadline);
    if (left == 0) return false;
    struct timespec ts {
      left / 1000, (left % 1000) * 1000000L
    };
    ::sigtimedwait(&chld, nullptr, &ts);
  }
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
  WaitFor(f.workdir, [&] { return Slurp(file).starts_with("ready\n"); });
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
    if (!WaitFor(
            f.workdir, [&] { return Lines(file).size() >= expect_lines; }, 2000)) {
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
  bool init_alive = !ExitsWithin(l, 1000);
  ::kill(l.init, SIGUSR1);
  int got = WaitExit(l);
  Cleanup(f, l);
  if (!init_alive)
    return Bad("init exited although the child ignored SIGTERM (exit " + std::to_string(got) + ")");
  if (got != 5) return Bad("exit " + std::to_string(got));
  return Ok("child kept running; init waited");
}

// The orphans exit at once; the zombies are counted after an event, not a
// delay: the probe saw every orphan exit (pidfds), and a SIGWINCH sent after
// that came through the init, which handles the lower-numbered SIGCHLD of
// those exits first (see sigprobe's Orphans).
CaseResult OrphansReaped(const InitFlavour& f) {
  const std::string file = f.workdir + "/orphans";
  Launched l = Launch(f, {Probe(), "orphans", "100", file, "0"});
  bool exited = WaitFor(
      f.workdir, [&] { return Slurp(file) == "exited\n"; }, kHangMs);
  ::kill(l.init, SIGWINCH);
  bool through = exited && WaitFor(f.workdir, [&] { return Slurp(file) == "exited\nbarrier\n"; });
  size_t zombies = ZombiesOf(l.init);
  ::kill(l.init, SIGWINCH);
  int got = WaitExit(l);
  Cleanup(f, l);
  if (!exited) return Bad("the 100 orphans did not all exit; the probe wrote: " + Slurp(file));
  if (!through) return Bad("SIGWINCH was not forwarded: cannot tell when the orphans are due to be reaped");
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
  // A handler may still be writing when an init exits without waiting for
  // it (a subreaper's orphans run on): give them half a second.
  auto handled = [&](const char* who) { return !Slurp(f.workdir + "/" + who + "-handled").empty(); };
  WaitFor(
      f.workdir, [&] { return handled("A") && handled("C"); }, 500);
  bool a = handled("A");
  bool c = handled("C");
  Pause(100);
  size_t left = ProcessesMentioning(f.workdir + " 3 500").size();
  Cleanup(f, l);
  std::string detail = std::string("TERM handler ran: ") + (a ? "yes" : "no") +
                       ", setsid escapee's: " + (c ? "yes" : "no") +
                       ", left running: " + std::to_string(left) + ", exit " + std::to_string(got);
  if (hung || got != 3 || !a || !c || left != 0) return Bad(detail);
  return Ok(detail);
}

// A pty whose slave end becomes the init's controlling terminal.
struct Pty {
  int master = -1;
  int slave = -1;
  Pty() {
    master = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || ::grantpt(master) < 0 || ::unlockpt(master) < 0) return;
    slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  }
  ~Pty() {
    if (slave >= 0) ::close(slave);
    if (master >= 0) ::close(master);
  }
};

CaseResult TtyJobControl(const InitFlavour& f) {
  Pty pty;
  if (pty.slave < 0) return Bad("no pty");
  int master = pty.master;
  LaunchOptions o;
  o.tty = pty.slave;
  Launched l = Launch(f, {Probe(), "tty"}, o);
  ::close(pty.slave);
  pty.slave = -1;
  std::string seen;
  auto deadline = Clock::now() + milliseconds(5000);
  while (seen.find("foreground") == std::string::npos ||
         seen.find('\n', seen.find("foreground")) == std::string::npos) {
    struct pollfd p {
      master, POLLIN, 0
    };
    if (::poll(&p, 1, Left(deadline)) <= 0) break;
    char buf[256];
    ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;
    seen.append(buf, static_cast<size_t>(n));
  }
  bool fg = seen.find("foreground yes") != std::string::npos;
  (void)!::write(master, "\x03", 1);  // Ctrl-C
  int got = WaitExit(l, nullptr, 5000);
  Cleanup(f, l);
  std::string detail =
      std::string("foreground: ") + (fg ? "yes" : "no") + ", Ctrl-C exit " + std::to_string(got);
  if (!fg || got != 130) return Bad(detail);
  return Ok(detail);
}

// Under a terminal, SIGTSTP is forwarded and the init stops with the
// command (dumb-init's job control); SIGCONT continues it and reaches the
// command. A PID namespace's init cannot stop itself (the kernel drops
// SIGSTOP sent from inside), so there only the forwarding is asked for.
// Without a terminal nothing changes: forward_each_signal_once sends SIGTSTP
// and needs the signals after it forwarded too.
CaseResult TtyStopsWithTheCommand(const InitFlavour& f) {
  Pty pty;
  if (pty.slave < 0) return Bad("no pty");
  std::string file = f.workdir + "/job";
  LaunchOptions o;
  o.tty = pty.slave;
  sigset_t chld, old;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, &old);  // the init's stop is waited on as its SIGCHLD
  Launched l = StartRecorder(f, file, {"--stop-on", "TSTP", "--exit-on", "USR1"}, o);
  auto has = [&](int sig) {
    auto lines = Lines(file);
    return std::find(lines.begin(), lines.end(), std::to_string(sig)) != lines.end();
  };
  ::kill(l.init, SIGTSTP);
  bool forwarded = WaitFor(
      f.workdir, [&] { return has(SIGTSTP); }, 2000);
  bool stopped = !f.pid1 && WaitStopped(l.init, 2000);
  // As PID 1 the init does not stop, so nothing here says when the command
  // has: a SIGCONT that reaches it between its record of SIGTSTP and its
  // SIGSTOP is undone by that stop (seen under qemu, where the window is
  // wide). So SIGCONT is sent again while none is recorded, and once more
  // before SIGUSR1 (on a command still running, one more line).
  const int tries = f.pid1 ? 4 : 1;
  bool continued = false;
  for (int i = 0; i < tries && !continued; ++i) {
    ::kill(l.init, SIGCONT);
    continued = WaitFor(
        f.workdir, [&] { return has(SIGCONT); }, 2000 / tries);
  }
  if (f.pid1) ::kill(l.init, SIGCONT);
  ::kill(l.init, SIGUSR1);
  int got = WaitExit(l, nullptr, 5000);
  Cleanup(f, l);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  std::string detail = std::string("SIGTSTP forwarded: ") + (forwarded ? "yes" : "no");
  if (!f.pid1) detail += std::string(", init stopped: ") + (stopped ? "yes" : "no");
  detail +=
      std::string(", SIGCONT forwarded: ") + (continued ? "yes" : "no") + ", exit " + std::to_string(got);
  if (!forwarded || (!f.pid1 && !stopped) || !continued || got != 0) return Bad(detail);
  return Ok(detail);
}

// Job control as a shell does it: the init is the terminal's foreground
// job under a shell, and hands the terminal on to the command. Ctrl-Z
// reaches the command, which stops (as an editor does once it restored the
// terminal); the init stops with it, so the shell sees the job stopped and
// takes the terminal. `fg` gives the terminal to the init's group and
// continues it; the command must get the terminal back before it runs on.
// A PID namespace's init cannot stop itself, and no shell runs in front of
// it (`podman run -it`): there Ctrl-Z stops the command alone, and SIGCONT
// sent to the init continues it.
CaseResult CtrlZ(const InitFlavour& f) {
  const bool shell = !f.pid1;
  Pty pty;
  if (pty.slave < 0) return Bad("no pty");
  std::string rec = f.workdir + "/ctrlz", job = f.workdir + "/shell";
  LaunchOptions o;
  o.tty = pty.slave;
  if (shell) o.shell = job;
  Launched l = StartRecorder(f, rec, {"--stop-on", "TSTP", "--exit-on", "USR1"}, o);
  ::close(pty.slave);
  pty.slave = -1;
  auto has = [](const std::string& file, const std::string& line) {
    auto lines = Lines(file);
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  auto foreground = [&] {
    pid_t group = -1;
    return ::ioctl(pty.master, TIOCGPGRP, &group) == 0 ? group : -1;
  };
  pid_t init = l.init;
  if (shell) {
    init = -1;
    WaitFor(f.workdir, [&] { return Slurp(job).starts_with("job "); });
    auto lines = Lines(job);
    if (!lines.empty() && lines[0].starts_with("job ")) init = std::stoi(lines[0].substr(4));
  }
  auto kids = init > 0 ? ChildrenOf(init) : std::vector<pid_t>{};
  pid_t command_group = kids.empty() ? -1 : ::getpgid(kids.front());
  bool command_fg = command_group > 0 && foreground() == command_group;
  (void)!::write(pty.master, "\x1a", 1);  // Ctrl-Z
  bool command_stopped = WaitFor(
      f.workdir, [&] { return has(rec, std::to_string(SIGTSTP)); }, 2000);
  bool job_stopped =
      !shell || WaitFor(
                    f.workdir, [&] { return Slurp(job).find("stopped ") != std::string::npos; }, 2000);
  ::kill(l.init, shell ? SIGUSR1 : SIGCONT);  // the shell's fg, or the operator's kill -CONT
  bool continued = WaitFor(
      f.workdir, [&] { return has(rec, std::to_string(SIGCONT)); }, 2000);
  bool fg_again = command_group > 0 && foreground() == command_group;
  if (init > 0) ::kill(init, SIGUSR1);
  int got = WaitExit(l, nullptr, 5000);
  Cleanup(f, l);
  std::string detail = std::string("command in the foreground: ") + (command_fg ? "yes" : "no") +
                       ", Ctrl-Z stopped the command: " + (command_stopped ? "yes" : "no");
  if (shell) detail += std::string(", the shell saw the job stop: ") + (job_stopped ? "yes" : "no");
  detail += std::string(shell ? ", after fg" : ", after SIGCONT") +
            " the command ran on: " + (continued ? "yes" : "no") +
            ", in the foreground: " + (fg_again ? "yes" : "no") + ", exit " + std::to_string(got);
  if (!command_fg || !command_stopped || !job_stopped || !continued || !fg_again || got != 0)
    return Bad(detail);
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
  WaitFor(f.workdir,
          [&] { return Slurp(file).find("\n" + std::to_string(SIGUSR2) + "\n") != std::string::npos; });
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

// A signal rewritten to 0 is dropped: the command never sees it, and the
// init keeps running.
CaseResult SignalDropped(const InitFlavour& f) {
  if (f.drop_hup.empty()) return NotApplicable("no way to drop a signal");
  std::string file = f.workdir + "/dropped";
  InitFlavour dropping = f;
  dropping.prefix.insert(dropping.prefix.end() - 1, f.drop_hup.begin(), f.drop_hup.end());
  Launched l = StartRecorder(dropping, file, {"--exit-on", "USR1", "--exit-code", "6"});
  ::kill(l.init, SIGHUP);
  ::kill(l.init, SIGUSR1);  // forwarded after SIGHUP would have been
  int got = WaitExit(l);
  auto lines = Lines(file);
  Cleanup(f, l);
  std::vector<std::string> want{"ready", std::to_string(SIGUSR1)};
  if (got != 6 || lines != want) {
    std::string seen;
    for (auto& x : lines) seen += x + " ";
    return Bad("received " + seen + "exit " + std::to_string(got));
  }
  return Ok("SIGHUP dropped, SIGUSR1 forwarded");
}

CaseResult SignalGroup(const InitFlavour& f) {
  if (!f.agent_init) return NotApplicable("tested for agent-init's --signal-group");
  InitFlavour grouped = f;
  grouped.prefix.insert(grouped.prefix.end() - 1, "--signal-group");
  std::string a = f.workdir + "/group-a", b = f.workdir + "/group-b";
  Launched l = Launch(grouped, {"/bin/sh", "-c",
                                Probe() + " record " + a + " --exit-on USR1 & exec " + Probe() + " record " +
                                    b + " --exit-on USR1"});
  WaitFor(f.workdir, [&] { return Slurp(a).starts_with("ready") && Slurp(b).starts_with("ready"); });
  ::kill(l.init, SIGUSR1);
  int got = WaitExit(l);
  bool both = Lines(a).size() == 2 && Lines(b).size() == 2;
  Cleanup(f, l);
  if (!both || got != 0) return Bad("the group did not get the signal (exit " + std::to_string(got) + ")");
  return Ok("whole group signalled");
}

}  // namespace

// Like fork, but the child is PID 1 of a new PID namespace with its own
// /proc (unshare --pid --fork --mount-proc, without the process in between
// whose child would have to be looked for). Done as unshare(CLONE_NEWPID),
// fork and setns back, not as one clone(CLONE_NEWPID | CLONE_NEWNS): qemu-user
// refuses namespace flags in clone (EINVAL), not in unshare and setns.
pid_t ForkInit(bool pid1) {
  if (!pid1) return ::fork();
  UniqueFd own(::open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC));
  if (!own.valid() || ::unshare(CLONE_NEWPID) < 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) < 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0 ||
        ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) < 0) {
      ::_exit(125);
    }
    return 0;
  }
  int saved = errno;
  // Our later children are born in our own namespace again.
  if (::setns(own.get(), CLONE_NEWPID) < 0) {
    std::perror("init_cases: setns back to our PID namespace");
    std::abort();
  }
  errno = saved;
  return pid;
}


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
      {"orphans_reaped", "100 orphans exiting together leave no zombie", OrphansReaped},
      {"burst_of_exits", "300 simultaneous exits do not hide the command's exit", BurstOfExits},
      {"inherited_sigchld_ignored", "started with SIGCHLD ignored: no hang, and the child gets it ignored",
       InheritedSigchldIgnored},
      {"inherited_masks", "child gets the caller's blocked and ignored signals exactly", InheritedMasks},
      {"grace_shutdown",
       "after the command exits: TERM to descendants (setsid escapees too), KILL after grace", GraceShutdown},
      {"tty_job_control", "under a TTY the child is the foreground; Ctrl-C gives 130", TtyJobControl},
      {"tty_stop", "under a TTY: SIGTSTP forwarded, init stops (not as PID 1), SIGCONT forwarded",
       TtyStopsWithTheCommand},
      {"tty_ctrl_z",
       "Ctrl-Z stops the command; under a shell the init stops too (not as PID 1), fg gives the command "
       "the terminal back",
       CtrlZ},
      {"no_fd_leak", "init keeps no inherited fd after spawning; the child gets them", NoFdLeak},
      {"signal_map", "--signal-map TERM:QUIT rewrites before forwarding", SignalMap},
      {"signal_drop", "a signal rewritten to 0 is dropped (--signal-map HUP:0, dumb-init --rewrite 1:0)",
       SignalDropped},
      {"signal_group", "--signal-group signals the child's process group", SignalGroup},
  };
  return cases;
}

}  // namespace agent_init::test
