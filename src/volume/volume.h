// The state volume (--state): the directory the operator mounts, where the
// agent's run directory lives for each layout, and agent-init's bookkeeping
// directory with its one journal. Everything that reads or changes the
// volume reaches it through this type; the names are in volume/names.h.
#pragma once

#include <string>
#include <string_view>

#include "base/dir.h"
#include "base/error.h"
#include "config.h"
#include "volume/journal.h"

namespace agent_init {

class Volume {
 public:
  /// Opens the volume at `path` (the operator's --state; symlinks in it are
  /// followed). A missing directory is an error that says what to mount.
  static Result<Volume> Open(const std::string& path);

  Volume(Volume&& other) noexcept;
  Volume& operator=(Volume&&) = delete;
  Volume(const Volume&) = delete;

  const Dir& dir() const { return dir_; }
  const std::string& path() const { return dir_.path(); }

  /// The agent's run directory below STATE for `layout`: "run" or "data/run".
  static std::string_view RunRel(Layout layout);
  /// Its absolute path as the agent sees it (the symlink target), for a
  /// volume at `state`.
  static std::string RunPathOf(const std::string& state, Layout layout);
  std::string RunPath(Layout layout) const { return RunPathOf(path(), layout); }

  /// Creates what is missing of the run directory (0770) and opens it.
  Result<Dir> MakeRun(Layout layout) const;
  /// Opens the directory that holds the run directory: STATE or STATE/data.
  Result<Dir> OpenRunParent(Layout layout) const;
  /// Which layout's run directory the volume holds: the state layout's when
  /// only STATE/data/run exists, else the run layout's.
  Layout HeldLayout() const;

  /// STATE/data, the state layout's data directory ($STATE_PATH/data).
  Result<Dir> MakeData() const;
  Result<Dir> OpenData() const;

  /// A volume mounted read-only is an error (73) that says so: everything
  /// agent-init and the agent do there writes.
  Result<void> RequireWritable() const;

  /// Creates (0700) and opens STATE/.agent-init (after RequireWritable).
  Result<void> MakeBookkeeping();
  /// Opens STATE/.agent-init when it exists; false when agent-init never ran here.
  Result<bool> OpenBookkeeping();
  /// STATE/.agent-init, once made or opened.
  const Dir& bookkeeping() const { return bookkeeping_; }
  /// The display path of `rel` below STATE/.agent-init (empty: the directory).
  std::string BookkeepingPath(std::string_view rel) const;

  /// The journal of multi-step changes, in STATE/.agent-init (once
  /// MakeBookkeeping or OpenBookkeeping succeeded).
  Journal& journal() { return journal_; }

  /// A refusal on permissions at `rel` below STATE (a step that creates or
  /// opens it), explained: who agent-init runs as, the owner and mode of the
  /// directory that refused and how to hand the volume to this user. Other
  /// errors come back as they are.
  Error ExplainDenial(Error e, std::string_view rel) const;

 private:
  explicit Volume(Dir dir) : dir_(std::move(dir)), journal_(bookkeeping_) {}

  Dir dir_;
  Dir bookkeeping_;
  Journal journal_;  // over bookkeeping_
};

}  // namespace agent_init
