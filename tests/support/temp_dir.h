// Test helpers: a temporary directory removed at the end of the test, and
// small file utilities that fail the test loudly instead of returning errors.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace agent_init::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

void MakeDirs(const std::string& path, mode_t mode = 0755);
void WriteFile(const std::string& path, const std::string& content, mode_t mode = 0644);
std::string ReadFile(const std::string& path);
void Symlink(const std::string& target, const std::string& path);
bool Exists(const std::string& path);  // lstat succeeds
bool IsSymlink(const std::string& path);
bool IsDir(const std::string& path);  // lstat: a real directory

/// The root directory of a btrfs subvolume (inode number 256).
bool IsBtrfsSubvolume(const std::string& path);

/// A btrfs filesystem made in the new image file `path` (256 MiB, sparse);
/// the path, or "" when mkfs.btrfs fails.
std::string MakeBtrfsImage(const std::string& path);

/// Runs a shell command line; returns its exit status (or 128+signal).
int Shell(const std::string& command);

/// Runs argv with the given extra environment ("K=V"; "K" alone unsets K),
/// capturing stdout and stderr; returns the exit status.
struct RunResult {
  int status = -1;
  std::string out;
  std::string err;
};
RunResult Run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});

/// Whom a command runs as (the caller must be root): as a container's USER.
struct RunAsUser {
  uid_t uid;
  gid_t gid;
  std::vector<gid_t> groups;  // supplementary groups
};
/// Run, with the child switched to `as` before the exec.
RunResult RunAs(const RunAsUser& as, const std::vector<std::string>& argv,
                const std::vector<std::string>& env = {});

/// Starts argv in the background, stdout and stderr appended to `log_path`.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log_path);

/// Waits for a spawned process; its exit status (or 128+signal).
int Wait(pid_t pid);

/// A checksum of a whole tree: relative paths, types, modes, sizes,
/// symlink targets and file contents (not times). Equal trees, equal sums.
std::string TreeDigest(const std::string& root);

}  // namespace agent_init::test
