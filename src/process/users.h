// Resolving --user USER[:GROUP] from /etc/passwd and /etc/group by parsing
// them: a static binary must not call getpwnam(3), which loads NSS modules
// at run time. The semantics follow gosu and Docker:
//   USER        uid, primary gid and supplementary groups from the files
//   USER:GROUP  that group only, no supplementary groups
//   numeric ids need no entry; a numeric uid without one gets gid = uid
// An unknown name is an error, never a fall back to root.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace agent_init {

struct PasswdEntry {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

struct GroupEntry {
  std::string name;
  gid_t gid = 0;
  std::vector<std::string> members;
};

/// One line of /etc/passwd or /etc/group; std::nullopt for comments, blank,
/// short or malformed lines (they are skipped, as the C library does).
std::optional<PasswdEntry> ParsePasswdLine(std::string_view line);
std::optional<GroupEntry> ParseGroupLine(std::string_view line);

/// A decimal id without sign or garbage, below 2^32-1.
std::optional<unsigned> ParseId(std::string_view text);

struct Credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // for setgroups(2): empty for USER:GROUP
  std::string name;           // empty when the uid has no passwd entry
  std::string home;           // from passwd, empty when unknown
};

/// Resolves `spec` (USER, USER:GROUP, numeric or names) against the text of
/// the passwd and group files. Unknown names: kNoUser (exit 67).
Result<Credentials> ResolveUser(std::string_view spec, std::string_view passwd, std::string_view group);

/// Reads /etc/passwd and /etc/group (missing files are empty) and resolves.
Result<Credentials> ResolveUserFromFiles(std::string_view spec, const std::string& etc = "/etc");

}  // namespace agent_init
