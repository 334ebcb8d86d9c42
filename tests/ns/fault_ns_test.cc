// Crash safety, for real: the dev build of agent-init kills itself with
// SIGKILL at the step named by AGENT_INIT_FAULT_STEP (src/base/fault.h). Each
// scenario is run once cleanly for the expected result, then killed at every
// step in turn (1, 2, 3, ... until a run completes without reaching the
// step), restarted, and the whole state tree compared with the expected one.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "binary.h"
#include "home_fixture.h"
#include "namespace.h"
#include "power_loss.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

using test::AgentInit;
using test::Contains;
using test::InMountNamespace;
using test::RunResult;

constexpr int kKilled = 128 + SIGKILL;

struct Scenario {
  std::function<std::string()> setup;                             // a fresh world; "" or a failure
  std::function<RunResult(const std::vector<std::string>&)> act;  // the change, with extra environment
  std::function<RunResult()> restart;                             // the next start after a crash
  std::function<std::string()> digest;                            // the state that must result
  // On powerfs (tests/support/power_loss.h): the fresh world made durable,
  // and the power cut (after the crash, after the restart, and after the
  // clean run). Unset: a crash only, where the kernel keeps every write.
  std::function<void()> settle;
  std::function<std::string()> power_loss;
};

// The power cut, where the scenario has one: "" or what failed.
std::string CutPower(const Scenario& s, const std::string& when) {
  if (!s.power_loss) return "";
  if (auto e = s.power_loss(); !e.empty()) return "power loss " + when + ": " + e;
  return "";
}

// A fresh world for each run, durable where the scenario says how.
std::string Setup(const Scenario& s) {
  if (auto e = s.setup(); !e.empty()) return "setup: " + e;
  if (s.settle) s.settle();
  return "";
}

// Returns "" when every step recovers to the expected state; `steps` gets
// the number of fault points the change passed through. With a power loss,
// the expected state is what the clean run left durable, and each crash is
// followed by the power cut, the restart, and the power cut again.
std::string Sweep(const Scenario& s, int& steps) {
  if (auto e = Setup(s); !e.empty()) return e;
  RunResult clean = s.act({});
  if (clean.status != 0) return "clean run failed: " + clean.err;
  const std::string done = s.digest();
  if (auto e = CutPower(s, "after the clean run"); !e.empty()) return e;
  const std::string expected = s.digest();
  if (expected != done) {
    return "the clean run's result is not durable: after a power loss\n--- expected\n" + done + "--- got\n" +
           expected;
  }
  for (int k = 1; k < 1000; ++k) {
    if (auto e = Setup(s); !e.empty()) return e;
    RunResult r = s.act({"AGENT_INIT_FAULT_STEP=" + std::to_string(k)});
    if (r.status != kKilled) {
      steps = k - 1;
      if (r.status != 0) return "step " + std::to_string(k) + ": run past the last step failed: " + r.err;
      if (auto e = CutPower(s, "after a run without a crash"); !e.empty()) return e;
      if (s.digest() != expected) return "a run without a crash differs from the clean run";
      return "";
    }
    if (!Contains(r.err, "fault-injection: killed at step " + std::to_string(k))) {
      return "step " + std::to_string(k) + ": died without the fault switch: " + r.err;
    }
    if (auto e = CutPower(s, "after step " + std::to_string(k)); !e.empty()) return e;
    RunResult again = s.restart();
    if (again.status != 0) return "restart after step " + std::to_string(k) + " failed: " + again.err;
    if (auto e = CutPower(s, "after the restart"); !e.empty()) return e;
    std::string got = s.digest();
    if (got != expected) {
      return "after a crash at step " + std::to_string(k) + " (" + r.err.substr(r.err.rfind('(')) +
             ") the state differs:\n--- expected\n" + expected + "--- got\n" + got;
    }
  }
  return "more than 1000 steps?";
}

// Conflict and snapshot directories carry times in their names; the digest
// compares their content, not their names.
std::string DigestWithoutFirstComponent(const std::string& root) {
  std::istringstream in(test::TreeDigest(root));
  std::string line, out;
  while (std::getline(in, line)) {
    size_t slash = line.find('/');
    size_t space = line.find(' ');
    if (slash == std::string::npos || slash > space) continue;  // the id directory itself
    out += line.substr(slash) + "\n";
  }
  return out;
}

class FaultNs : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_MOUNT_NAMESPACE();
    // The image, as it comes from the registry, kept pristine for each round.
    test::Make711Home(t_ / "image/home");
    std::string run = t_ / "image/home/data/elastic-agent-9b2fec/run";
    test::WriteFile(run + "/agent.id", "image-id");
    test::WriteFile(run + "/default/filebeat/registry/log.json", "offsets");
    test::WriteFile(run + "/same", "identical");
    test::WriteFile(run + "/conflict", "image-version");
    test::WriteFile(run + "/deep/a/b/c/d", "deep");
    test::Symlink("default/filebeat", run + "/link");
    // A relative home symlink, so that the copies of the image stay intact.
    ::unlink((t_ / "image/home/elastic-agent").c_str());
    test::Symlink("data/elastic-agent-9b2fec/elastic-agent", t_ / "image/home/elastic-agent");
    int fd = ::open((run + "/sparse").c_str(), O_WRONLY | O_CREAT, 0640);
    (void)!::pwrite(fd, "x", 1, 8 << 20);
    ::close(fd);
    test::MakeDirs(t_ / "work/state");
  }
  std::string H() { return t_ / "work/home"; }
  std::string S() { return t_ / "work/state"; }

  // A new container on the old volume: fresh image copy, fresh tmpfs (or,
  // with btrfs_image_, the btrfs image emptied, and STATE/run a subvolume).
  std::string FreshWorld() {
    if (test::Shell("rm -rf " + H() + " && cp -a " + t_ / "image/home " + H()) != 0) return "copy image";
    if (powerfs_) {
      // The volume as it is on the disk before the container starts.
      if (auto e = pfs_.Unmount(); !e.empty()) return e;
      const std::string disk = t_ / "work/disk";
      if (pfs_.backing().empty()) {
        if (auto e = pfs_.Prepare(disk, S()); !e.empty()) return e;
      } else if (test::Shell("find " + disk + " -mindepth 1 -delete") != 0) {
        return "empty the disk";
      }
      test::WriteFile(disk + "/run/conflict", "volume-version");
      test::WriteFile(disk + "/run/same", "identical");
      test::WriteFile(disk + "/run/deep/a/other", "volume");
      return pfs_.Mount();
    }
    ::umount2(S().c_str(), MNT_DETACH);
    if (!btrfs_image_.empty()) {
      if (test::Shell("mount -o loop,noexec " + btrfs_image_ + " " + S() + " && rm -rf " + S() + "/* " + S() +
                      "/.agent-init && btrfs -q subvolume create " + S() + "/run >/dev/null") != 0)
        return "mount the btrfs image, empty it, make STATE/run a subvolume";
    } else if (::mount("tmpfs", S().c_str(), "tmpfs", MS_NOEXEC, "mode=0755") < 0) {
      return std::strerror(errno);
    }
    test::WriteFile(S() + "/run/conflict", "volume-version");
    test::WriteFile(S() + "/run/same", "identical");
    test::WriteFile(S() + "/run/deep/a/other", "volume");
    return "";
  }
  // Every step of prepare's migration, killed and restarted; with `linked`
  // the state is at work/old-run, where VH/run points.
  void SweepMigration(const std::string& what, bool linked) {
    int steps = 0;
    std::string failure = InMountNamespace([&]() -> std::string {
      Scenario s;
      s.setup = [&] {
        if (linked && test::Shell("rm -rf " + t_ / "work/old-run" + " && cp -a " + t_ / "image/old-run " +
                                  t_ / "work/old-run") != 0)
          return std::string("copy the old set-up's run directory");
        return FreshWorld();
      };
      s.act = [&](const std::vector<std::string>& env) {
        return AgentInit({"--home", H(), "--state", S(), "--method", "symlink", "prepare"}, env);
      };
      s.restart = [&] { return s.act({}); };
      if (powerfs_) {
        ::setenv("AGENT_INIT_TEST_SYNCFS_NAME", test::kPowerFsSyncfsName, 1);
        s.power_loss = [&] { return pfs_.PowerLoss(); };
      }
      s.digest = [&] {
        std::string vh_run = H() + "/data/elastic-agent-9b2fec/run";
        char target[4096] = {};
        (void)!::readlink(vh_run.c_str(), target, sizeof target - 1);
        return "run:\n" + test::TreeDigest(S() + "/run") + "conflicts:\n" +
               DigestWithoutFirstComponent(S() + "/.agent-init/conflicts") + "vh/run -> " + target + "\n" +
               (linked ? "old-run:\n" + test::TreeDigest(t_ / "work/old-run") : "") +
               "leftovers: " + (test::Exists(S() + "/.agent-init/journal") ? "journal " : "") +
               (test::Exists(S() + "/.agent-init/migrate") ? "migrate " : "") + "\n";
      };
      // This runs in the namespace's child process: check and report here.
      std::string swept = Sweep(s, steps);
      std::string unmounted = pfs_.Unmount();
      if (!swept.empty()) return swept + (powerfs_ ? "\npowerfs: " + pfs_.LastReport() : "");
      NS_CHECK(steps > 10,
               "too few fault points (" + std::to_string(steps) + "): is the switch compiled in?");
      std::cout << what << ": recovered from a " << (powerfs_ ? "power loss" : "crash") << " at each of "
                << steps << " steps" << std::endl;
      return unmounted;
    });
    EXPECT_EQ(failure, "");
  }
  std::string btrfs_image_;  // a btrfs image file for the volume; tmpfs when empty
  bool powerfs_ = false;     // the volume on powerfs, with a power loss after each crash
  test::PowerFs pfs_;
  test::TempDir t_;
};

// Migration from the image (ext4) to the volume (tmpfs): copies across
// filesystems, conflicts, merges into existing directories.
TEST_F(FaultNs, MigrationSurvivesACrashAtEveryStep) { SweepMigration("migration", /*linked=*/false); }

// The same on powerfs: the power is cut after the crash at each step, and
// after the restart; only what agent-init made durable is left each time.
TEST_F(FaultNs, MigrationSurvivesAPowerLossAtEveryStep) {
  REQUIRE_POWERFS();
  powerfs_ = true;
  SweepMigration("migration", /*linked=*/false);
}

// The same into a btrfs volume whose STATE/run is a subvolume: nothing can
// be renamed into it, every file is copied across.
TEST_F(FaultNs, MigrationIntoABtrfsSubvolumeSurvivesACrashAtEveryStep) {
  REQUIRE_MKFS_BTRFS();
  btrfs_image_ = test::MakeBtrfsImage(t_ / "volume.img");
  ASSERT_FALSE(btrfs_image_.empty()) << "mkfs.btrfs";
  SweepMigration("migration into a btrfs subvolume", /*linked=*/false);
}

// A hand-made set-up's VH/run, a symlink to a directory outside the volume
// that holds the state: migrated like the image's own directory, emptied,
// and the symlink replaced, whatever step a crash interrupts.
TEST_F(FaultNs, MigrationFromASymlinkedRunSurvivesACrashAtEveryStep) {
  std::string image_run = t_ / "image/home/data/elastic-agent-9b2fec/run";
  ASSERT_EQ(test::Shell("mv " + image_run + " " + t_ / "image/old-run"), 0);
  test::Symlink(t_ / "work/old-run", image_run);
  SweepMigration("migration from a symlinked VH/run", /*linked=*/true);
}

class FaultVolume : public ::testing::Test {
 protected:
  void SetUp() override {
    test::MakeImages(t_.path(), {"elastic-agent-aaaaaa", "elastic-agent-bbbbbb"});
  }
  std::string S() { return btrfs_ ? t_ / "btrfs/state" : powerfs_ ? t_ / "powerfs/state" : t_ / "state"; }
  // In the calling (private) mount namespace: the volume on a btrfs image
  // from here on; "" or what failed.
  std::string OnBtrfs() {
    std::string image = test::MakeBtrfsImage(t_ / "volume.img");
    test::MakeDirs(t_ / "btrfs");
    if (image.empty() || test::Shell("mount -o loop " + image + " " + t_ / "btrfs") != 0)
      return "btrfs image";
    btrfs_ = true;
    return "";
  }
  RunResult Start(const char* vh, const std::vector<std::string>& env = {}, const std::string& keep = "") {
    std::vector<std::string> args{"--home", t_ / std::string("image-") + vh, "--state", S(), "--method", "symlink"};
    if (!keep.empty()) args.insert(args.end(), {"--keep-snapshots", keep});
    args.push_back("prepare");
    return AgentInit(args, env);
  }
  // A's image with --layout LAYOUT.
  RunResult StartInLayout(const char* layout, const std::vector<std::string>& env = {}) {
    return AgentInit(
        {"--home", t_ / "image-elastic-agent-aaaaaa", "--state", S(), "--layout", layout, "prepare"}, env);
  }
  // The layout change of A's volume: from the run layout A left it in to
  // the state layout. `a_state` gets A's state when the world is made.
  Scenario LayoutChange(std::string& a_state) {
    Scenario s;
    s.setup = [this, &a_state]() -> std::string {
      if (auto e = VolumeUsedByA(); !e.empty()) return e;
      a_state = test::TreeDigest(S() + "/run");
      // A's own files, where the run layout keeps them (volume/identity.h).
      test::WriteFile(S() + "/home/fleet.yml", "agent:\n  id: A\n");
      test::WriteFile(S() + "/home/elastic-agent.yml", "fleet:\n  enabled: true\n");
      test::WriteFile(S() + "/home/vault/.seed", "seed-A");
      test::WriteFile(S() + "/versioned-home/action_store.yml", "revision: 7\n");
      return "";
    };
    s.act = [this](const std::vector<std::string>& env) { return StartInLayout("state", env); };
    return s;
  }
  // The volume after A ran: history says A, run holds A's state, and two
  // older snapshots wait to be pruned.
  // With `subvolume_run`, STATE/run is a btrfs subvolume.
  std::string VolumeUsedByA(bool subvolume_run = false) {
    test::Shell("rm -rf " + S());
    test::MakeDirs(S());
    if (subvolume_run && test::Shell("btrfs -q subvolume create " + S() + "/run >/dev/null") != 0)
      return "btrfs subvolume create";
    if (Start("elastic-agent-aaaaaa").status != 0) return "first start of A";
    test::WriteFile(S() + "/run/agent.id", "A");
    test::WriteFile(S() + "/run/comp/registry", "offsets-A");
    test::Symlink("comp", S() + "/run/link");
    ::mkfifo((S() + "/run/fifo").c_str(), 0600);
    int fd = ::open((S() + "/run/sparse").c_str(), O_WRONLY | O_CREAT, 0600);
    (void)!::pwrite(fd, "y", 1, 4 << 20);
    ::close(fd);
    for (auto [name, age] : {std::pair{"old-1", 2000}, std::pair{"old-2", 1000}}) {
      std::string dir = S() + "/.agent-init/snapshots/" + name;
      test::WriteFile(dir + "/agent.id", name);
      struct timeval tv[2];
      ::gettimeofday(&tv[0], nullptr);
      tv[0].tv_sec -= age;
      tv[1] = tv[0];
      ::utimes(dir.c_str(), tv);
    }
    return "";
  }
  // A's own files in the layout's places: Config's under `config`, Home's
  // under `home` (below STATE).
  std::string IdentityIn(const std::string& config, const std::string& home) {
    return std::string("A's ID there: ") + test::ReadFile(S() + config + "/fleet.yml") +
           "enrolled config there: " + test::ReadFile(S() + config + "/elastic-agent.yml") +
           "vault there: " + test::ReadFile(S() + config + "/vault/.seed") +
           "\naction store there: " + test::ReadFile(S() + home + "/action_store.yml");
  }
  // The snapshots, the order recorded for them (newest last; the times
  // differ from run to run) and the run directory.
  std::string Snapshots() {
    std::string snaps = S() + "/.agent-init/snapshots";
    std::string tree = test::TreeDigest(snaps), kept;
    std::istringstream lines(tree);
    for (std::string line; std::getline(lines, line);)
      if (!line.starts_with(".order ")) kept += line + "\n";
    std::map<unsigned long, std::string> order;
    std::istringstream recorded(test::Exists(snaps + "/.order") ? test::ReadFile(snaps + "/.order") : "");
    for (std::string line; std::getline(recorded, line);) {
      // "snapshot <sequence>%20<taken>%20<name>"
      size_t a = line.find(' '), b = line.find("%20"), c = line.find("%20", b + 3);
      if (a == std::string::npos || c == std::string::npos) return "unreadable order: " + line;
      order[std::stoul(line.substr(a + 1, b - a - 1))] = line.substr(c + 3);
    }
    std::string names;
    for (const auto& [seq, name] : order) names += " " + name;
    return kept + "order:" + names + "\nrun:\n" + test::TreeDigest(S() + "/run") +
           "leftovers: " + (test::Exists(S() + "/.agent-init/journal") ? "journal" : "") + "\n";
  }
  // A -> B: snapshot of A's state (copy, publish over an older one, prune).
  Scenario Snapshot(const std::string& keep = "") {
    Scenario s;
    s.setup = [this] { return VolumeUsedByA(); };
    s.act = [this, keep](const std::vector<std::string>& env) { return Start("elastic-agent-bbbbbb", env, keep); };
    s.restart = [this, keep] { return Start("elastic-agent-bbbbbb", {}, keep); };
    s.digest = [this] { return Snapshots(); };
    return s;
  }
  // restore A over B's state; the operator runs restore again after a
  // crash. `a_state` and `b_state` get the two states when the world is made.
  Scenario Restore(std::string& a_state, std::string& b_state, const std::string& keep = "2") {
    Scenario s;
    s.setup = [this, &a_state, &b_state]() -> std::string {
      if (auto e = VolumeUsedByA(); !e.empty()) return e;
      a_state = test::TreeDigest(S() + "/run");
      if (Start("elastic-agent-bbbbbb").status != 0) return "start of B";
      test::WriteFile(S() + "/run/agent.id", "B");
      b_state = test::TreeDigest(S() + "/run");
      return "";
    };
    s.act = [this, keep](const std::vector<std::string>& env) {
      return AgentInit({"--state", S(), "--keep-snapshots", keep, "restore", "elastic-agent-aaaaaa"}, env);
    };
    s.restart = [this, keep] {
      return AgentInit({"--state", S(), "--keep-snapshots", keep, "restore", "elastic-agent-aaaaaa"});
    };
    s.digest = [this, &a_state, &b_state, keep] {
      // run holds A's state, A's snapshot is intact, and B's state is kept
      // in a before-restore snapshot; nothing half-done is left.
      std::string snaps = S() + "/.agent-init/snapshots/";
      bool b_kept = false;
      for (const auto& e : std::filesystem::directory_iterator(snaps)) {
        if (e.path().filename().string().starts_with("before-restore-") &&
            test::TreeDigest(e.path()) == b_state) {
          b_kept = true;
        }
      }
      // (With --keep-snapshots 1 a restore keeps two: a restore run again
      // after the crash keeps its own before-restore copy and B's, not A's.)
      return std::string("run is A: ") + (test::TreeDigest(S() + "/run") == a_state ? "yes" : "no") +
             (keep == "1" ? std::string()
                          : std::string("\nsnapshot A intact: ") +
                                (test::TreeDigest(snaps + "elastic-agent-aaaaaa") == a_state ? "yes" : "no")) +
             "\nB kept: " + (b_kept ? "yes" : "no") +
             "\nleftovers: " + (test::Exists(S() + "/.agent-init/journal") ? "journal " : "") +
             (test::Exists(S() + "/.agent-init/restore.partial") ? "partial" : "") + "\n";
    };
    return s;
  }
  // The state layout with CONFIG_PATH in the image's home (ECK, Fleet
  // agents before 8.13): the fleet.enc and vault/ an older start left there
  // move onto the volume as one unit.
  Scenario IdentityCarry() {
    const std::string image = t_ / "image-elastic-agent-aaaaaa";
    Scenario s;
    s.setup = [this, image]() -> std::string {
      test::Shell("rm -rf " + S() + " " + image + "/fleet.enc " + image + "/vault");
      test::MakeDirs(S());
      test::WriteFile(image + "/fleet.enc", "enc:A");
      test::WriteFile(image + "/vault/.seed", "seed-A");
      test::WriteFile(image + "/vault/0123456789abcdef", "key-A");
      test::WriteFile(image + "/elastic-agent.yml", "fleet:\n  enabled: true\n");
      return "";
    };
    s.act = [this, image](const std::vector<std::string>& env) {
      std::vector<std::string> with = env;
      with.push_back("CONFIG_PATH=" + image);
      return StartInLayout("state", with);
    };
    s.restart = [this, image] { return StartInLayout("state", {"CONFIG_PATH=" + image}); };
    s.digest = [this] {
      return "fleet.enc: " + test::ReadFile(S() + "/fleet.enc") + "\nvault:\n" +
             test::TreeDigest(S() + "/vault") + "config: " + test::ReadFile(S() + "/elastic-agent.yml") +
             "leftovers: " + (test::Exists(S() + "/.agent-init/journal") ? "journal " : "") +
             (test::Exists(S() + "/.agent-init/carry") ? "carry " : "") + "\n";
    };
    return s;
  }
  // The digest of LayoutChange.
  std::string LayoutChangeDigest(const std::string& a_state) {
    std::string snaps = S() + "/.agent-init/snapshots/";
    return std::string("data/run is A's state: ") +
           (test::TreeDigest(S() + "/data/run") == a_state ? "yes" : "no") + "\nsnapshot intact: " +
           (test::TreeDigest(snaps + "layout-run-to-state") == a_state ? "yes" : "no") +
           "\nlayout: " + test::ReadFile(S() + "/.agent-init/layout") + IdentityIn("", "/data") +
           "leftovers: " + (test::Exists(S() + "/run") ? "run " : "") +
           (test::Exists(S() + "/home/fleet.yml") ? "home/fleet.yml " : "") +
           (test::Exists(S() + "/.agent-init/journal") ? "journal " : "") +
           (test::Exists(S() + "/.agent-init/carry") ? "carry " : "") +
           (test::Exists(S() + "/.agent-init/migrate") ? "migrate " : "") + "\n";
  }
  // `s` swept on powerfs, in a private mount namespace: the power is cut
  // after the crash at each step (and after the restart), and only what
  // agent-init made durable is left each time. "" or the failure.
  std::string PowerSweep(Scenario s, const std::string& what, int min_steps) {
    return InMountNamespace([&]() -> std::string {
      if (auto e = pfs_.Prepare(t_ / "disk", t_ / "powerfs"); !e.empty()) return e;
      if (auto e = pfs_.Mount(); !e.empty()) return e;
      powerfs_ = true;
      ::setenv("AGENT_INIT_TEST_SYNCFS_NAME", test::kPowerFsSyncfsName, 1);
      s.settle = [this] { pfs_.Sync(); };
      s.power_loss = [this] { return pfs_.PowerLoss(); };
      int steps = 0;
      std::string swept = Sweep(s, steps);
      std::string unmounted = pfs_.Unmount();
      if (!swept.empty()) return swept + "\npowerfs: " + pfs_.LastReport();
      NS_CHECK(steps >= min_steps, "too few fault points: " + std::to_string(steps));
      std::cout << what << ": recovered from a power loss at each of " << steps << " steps" << std::endl;
      return unmounted;
    });
  }
  bool btrfs_ = false;
  bool powerfs_ = false;  // the volume on powerfs (PowerSweep)
  test::PowerFs pfs_;
  test::TempDir t_;
};

// A -> B: snapshot of A's state (copy, publish over an older one, prune).
TEST_F(FaultVolume, SnapshotSurvivesACrashAtEveryStep) {
  int steps = 0;
  EXPECT_EQ(Sweep(Snapshot(), steps), "");
  EXPECT_GT(steps, 5);
  std::cout << "snapshot: recovered from a crash at each of " << steps << " steps\n";
}

// A -> B on btrfs: the first time STATE/run becomes a subvolume (copied
// into one, exchanged with the run directory); when it is one, the snapshot
// is a subvolume snapshot. At every step of both.
TEST_F(FaultVolume, SnapshotOnBtrfsSurvivesACrashAtEveryStep) {
  REQUIRE_MOUNT_NAMESPACE();
  REQUIRE_MKFS_BTRFS();
  std::string failure = InMountNamespace([&]() -> std::string {
    if (auto e = OnBtrfs(); !e.empty()) return e;
    for (bool subvolume_run : {false, true}) {
      int steps = 0;
      Scenario s;
      s.setup = [&] { return VolumeUsedByA(subvolume_run); };
      s.act = [&](const std::vector<std::string>& env) { return Start("elastic-agent-bbbbbb", env); };
      s.restart = [&] { return Start("elastic-agent-bbbbbb"); };
      // (Whether the snapshot is a subvolume depends on where a crash came:
      // the start after it finishes the change, then takes the snapshot
      // again, of a run directory that may be a subvolume by then.)
      s.digest = [&] {
        return Snapshots() + "run is a subvolume: " + (test::IsBtrfsSubvolume(S() + "/run") ? "yes" : "no") +
               "\n";
      };
      if (auto e = Sweep(s, steps); !e.empty()) return (subvolume_run ? "subvolume: " : "conversion: ") + e;
      NS_CHECK(steps > 5, "too few fault points: " + std::to_string(steps));
      NS_CHECK(test::IsBtrfsSubvolume(S() + "/run"), "STATE/run is a subvolume");
      NS_CHECK(test::IsBtrfsSubvolume(S() + "/.agent-init/snapshots/elastic-agent-aaaaaa") == subvolume_run,
               "the snapshot is a subvolume snapshot when STATE/run was one");
      std::cout << "btrfs snapshot (" << (subvolume_run ? "of a subvolume" : "making run a subvolume")
                << "): recovered from a crash at each of " << steps << " steps" << std::endl;
    }
    return "";
  });
  EXPECT_EQ(failure, "");
}

// restore A over B's state; the operator runs restore again after a crash.
TEST_F(FaultVolume, RestoreSurvivesACrashAtEveryStep) {
  int steps = 0;
  std::string a_state, b_state;
  EXPECT_EQ(Sweep(Restore(a_state, b_state), steps), "");
  EXPECT_GT(steps, 3);
  std::cout << "restore: recovered from a crash at each of " << steps << " steps\n";
}

// A layout change (7.12 -> 7.13+: STATE/run -> STATE/data/run): snapshot,
// then the journaled move within the volume, at every step.
TEST_F(FaultVolume, LayoutChangeSurvivesACrashAtEveryStep) {
  int steps = 0;
  std::string a_state;
  Scenario s = LayoutChange(a_state);
  s.restart = [&] { return s.act({}); };
  s.digest = [&] { return LayoutChangeDigest(a_state); };
  EXPECT_EQ(Sweep(s, steps), "");
  EXPECT_GT(steps, 5);
  std::cout << "layout change: recovered from a crash at each of " << steps << " steps\n";
}

// Every value of --keep-snapshots the command line accepts goes through the
// journal and its recovery: the extremes (1 and 1000; 0 takes no snapshot,
// and a restore keeps one more than asked, the snapshot of what it replaced)
// through a crash at every step of a snapshot and of a restore. A restore
// with 1000 wrote `keep 1001`, which the journal's own check refused: the
// next start exited 65 at every try, with STATE/run gone.
TEST_F(FaultVolume, TheKeepSnapshotsExtremesSurviveACrashAtEveryStep) {
  for (const char* keep : {"1", "1000"}) {
    SCOPED_TRACE(std::string("--keep-snapshots ") + keep);
    int steps = 0;
    EXPECT_EQ(Sweep(Snapshot(keep), steps), "");
    EXPECT_GT(steps, 5);
    std::string a_state, b_state;
    EXPECT_EQ(Sweep(Restore(a_state, b_state, keep), steps), "");
    EXPECT_GT(steps, 5);
  }
}

// The state layout with CONFIG_PATH in the image's home: the identity
// carried onto the volume as one unit, at every step.
TEST_F(FaultVolume, IdentityCarriedFromConfigPathSurvivesACrashAtEveryStep) {
  int steps = 0;
  Scenario s = IdentityCarry();
  EXPECT_EQ(Sweep(s, steps), "");
  EXPECT_GE(steps, 4);
  EXPECT_NE(s.digest().find("fleet.enc: enc:A"), std::string::npos) << s.digest();
  std::cout << "identity carried from CONFIG_PATH: recovered from a crash at each of " << steps << " steps\n";
}

// A crash in the middle of the layout change, then a rollback to the old
// image (the run layout) rather than a restart: the state must follow the
// record back, never leaving the old image on an empty STATE/run.
TEST_F(FaultVolume, ARollbackAfterACrashedLayoutChangeFindsTheState) {
  int steps = 0;
  std::string a_state;
  Scenario s = LayoutChange(a_state);
  s.restart = [&] { return StartInLayout("run"); };
  s.digest = [&] {
    // Wherever the record says the volume's layout is, A's state is there,
    // and only there.
    std::string layout = test::ReadFile(S() + "/.agent-init/layout");
    std::string here = layout == "state\n" ? "/data/run" : "/run",
                there = layout == "state\n" ? "/run" : "/data/run";
    return std::string("A's state where the record says: ") +
           (test::TreeDigest(S() + here) == a_state ? "yes" : "no") + "\n" +
           (layout == "state\n" ? IdentityIn("", "/data") : IdentityIn("/home", "/versioned-home")) +
           "\nthe other place: " + (test::Exists(S() + there) ? "exists" : "gone") +
           "\nleftovers: " + (test::Exists(S() + "/.agent-init/journal") ? "journal " : "") +
           (test::Exists(S() + "/.agent-init/migrate") ? "migrate " : "") + "\n";
  };
  EXPECT_EQ(Sweep(s, steps), "");
  EXPECT_GT(steps, 5);
  std::cout << "rollback after a crashed layout change: recovered at each of " << steps << " steps\n";
}

// The journaled changes on powerfs: the crash at each step followed by a
// power loss (only what agent-init made durable is left), the restart, and
// another power loss; then the state must be what the clean run left durable.
TEST_F(FaultVolume, SnapshotSurvivesAPowerLossAtEveryStep) {
  REQUIRE_POWERFS();
  EXPECT_EQ(PowerSweep(Snapshot(), "snapshot", 6), "");
}

TEST_F(FaultVolume, RestoreSurvivesAPowerLossAtEveryStep) {
  REQUIRE_POWERFS();
  std::string a_state, b_state;
  EXPECT_EQ(PowerSweep(Restore(a_state, b_state), "restore", 4), "");
}

TEST_F(FaultVolume, LayoutChangeSurvivesAPowerLossAtEveryStep) {
  REQUIRE_POWERFS();
  std::string a_state;
  Scenario s = LayoutChange(a_state);
  s.restart = [this] { return StartInLayout("state"); };
  s.digest = [this, &a_state] { return LayoutChangeDigest(a_state); };
  EXPECT_EQ(PowerSweep(s, "layout change", 6), "");
}

TEST_F(FaultVolume, IdentityCarriedFromConfigPathSurvivesAPowerLossAtEveryStep) {
  REQUIRE_POWERFS();
  EXPECT_EQ(PowerSweep(IdentityCarry(), "identity carried from CONFIG_PATH", 4), "");
}

// The power-loss sweeps can fail: with the syncfs before each publish taken
// out (a switch in test builds), a snapshot's copy is published by a rename
// that outlives its data, and the sweep says so.
TEST_F(FaultVolume, APowerLossSweepCatchesARemovedSyncfs) {
  REQUIRE_POWERFS();
  Scenario s = Snapshot();
  auto act = s.act;
  s.act = [act](const std::vector<std::string>& env) {
    std::vector<std::string> with = env;
    with.push_back("AGENT_INIT_TEST_WITHOUT_SYNCFS=1");
    return act(with);
  };
  std::string failure = PowerSweep(s, "snapshot without syncfs", 6);
  // Failed for what was lost, not for anything else (a mount, the set-up).
  EXPECT_TRUE(Contains(failure, "the state differs") || Contains(failure, "not durable"))
      << "a sweep without the syncfs must fail on the state a power loss left: " << failure;
  std::cout << "without the syncfs: " << failure.substr(0, failure.find('\n')) << std::endl;
}

}  // namespace
}  // namespace agent_init
