// Carrying the agent's own files (image/agent_files.h) onto the volume, or
// from one of its places on the volume to another (a layout change), as one
// unit: fleet.enc never arrives without its vault/. Journaled (op "carry"):
// the files are copied into STATE/.agent-init/carry, made durable, then
// renamed into place one by one; with `move`, the originals go last.
//
// Recovery trusts the journal only with what is on the volume: a carry from
// outside the volume that a crash cut short in its copy is dropped (the
// start that follows carries again from where the files still are), one cut
// short while publishing is finished from the durable copies, and only a
// move within the volume removes originals.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/dir.h"
#include "base/error.h"
#include "image/agent_files.h"
#include "volume/journal.h"
#include "volume/volume.h"

namespace agent_init {

struct CarryRequest {
  const Dir* from = nullptr;     // where the files are now
  std::optional<std::string> from_volume_rel;  // `from`'s place below STATE ("" for STATE) when on the volume
  std::string into_rel;          // below STATE (IsCarryPlace)
  std::vector<std::string> names;   // entries of `from`: names from the agent's table
  std::vector<std::string> remove;  // of those, the originals to remove once the copies are in place
};

/// Carries `r.names` from `r.from` into STATE/`r.into_rel`, which must not
/// hold them yet. Each arrives complete (files, or whole directories), durable
/// before it is published; then `r.remove` go from `r.from` (within the
/// volume as part of the journaled change, outside it best effort). The
/// bookkeeping directory must be open.
Result<void> Carry(Volume& volume, const CarryRequest& r);

/// Finishes (or drops, see above) a carry that `intent` says was interrupted.
Result<void> ResumeCarry(const Intent& intent, Volume& volume);

/// The directory `rel` below STATE (STATE itself for ""), when it exists.
Result<std::optional<Dir>> OpenVolumePlace(const Volume& volume, const std::string& rel);

/// Whether `f` is the same file, or the same tree, in `a` and `b` (missing
/// or unreadable on either side counts as different).
bool SameAgentFile(const Dir& a, const Dir& b, const AgentFile& f);

/// Whether an elastic-agent.yml is one that enrolment wrote: `fleet:` with
/// `enabled: true` (the agent's _meta/elastic-agent.fleet.yml, which enrolment
/// puts in place of the image's: beats bb79569dcf P/application/enroll_cmd.go:104-108).
bool IsEnrolledConfig(std::string_view text);

/// The agent's files `files` that `from` holds, carried into STATE/`into_rel`
/// by the one rule every placement shares: the volume's copy is the agent's.
///   identity    as a unit, and only when the volume holds no identity file:
///               fleet.enc never arrives beside another agent's vault/
///   enrolment   elastic-agent.yml, when enrolment wrote it and the volume has none
///   agent state each file the volume does not have
/// `move` removes the originals once the copies are durable: atomically with
/// the carry within the volume (`from_volume_rel`); outside it, best effort,
/// and never an elastic-agent.yml (the image's configuration stays where
/// the image put it).
/// True when something was carried.
Result<bool> CarryAgentFiles(Volume& volume, const Dir& from, const std::optional<std::string>& from_volume_rel,
                             const std::string& into_rel, const std::vector<const AgentFile*>& files, bool move);

}  // namespace agent_init
