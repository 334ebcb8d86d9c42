// Who agent-init runs as and whom a directory lets in: for the decisions and
// messages of a start that is not root (the official image's USER, an
// OpenShift uid), so that a refusal names the ids, the owner and mode it found.
#pragma once

#include <string>
#include <string_view>

#include "base/dir.h"
#include "base/error.h"

namespace agent_init {

/// "uid 1000, gid 1000, groups 1000 0": the effective ids and the groups.
std::string DescribeSelf();

/// "owned by 0:0, mode 0755" of the directory `dir` (of `path` when the
/// directory could not be opened); empty when it cannot be looked at.
std::string DescribeOwnership(const Dir& dir);
std::string DescribeOwnership(const std::string& path);

/// The effective uid:gid, as --user would name them: "1000:1000".
std::string SelfIds();

/// Whether this process may create and remove entries in `dir`, as the
/// kernel decides for its effective ids, groups and capabilities. A
/// read-only filesystem is not a refusal here (false only for EACCES/EPERM):
/// the step itself says that, with its own hint.
bool MayChange(const Dir& dir);

/// Whether `err` is a refusal on permissions.
inline bool IsPermissionError(int err) { return err == EACCES || err == EPERM; }

}  // namespace agent_init
