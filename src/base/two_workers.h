// Work shared by two processes: this one and a forked child, each taking the
// next item in turn (tree_copy.cc copies a directory's many files so). A
// process, not a thread: pthread_create would link 49 KB of glibc's threads
// into the static binary.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace agent_init {

/// Runs `item(i)` for every i below `count`: in this process alone, or,
/// where `two` and a child can be made, in this process and a forked child,
/// each taking the next i through an index in memory they share. Once an
/// item returns false in either, neither takes another. The child then sends
/// `report()` back through a pipe and exits; this process reaps it and gets
/// that report in `*child_report` (nullopt when no child ran). False when a
/// child ran and died without sending its report whole.
///
/// The child shares every descriptor (the volume's lock among them: a start
/// after a crash waits for it), and dies with this process
/// (PR_SET_PDEATHSIG). `item` in the child must not log, nor call test hooks.
bool RunOnTwoWorkers(std::size_t count, bool two, const std::function<bool(std::size_t)>& item,
                     const std::function<std::string()>& report, std::optional<std::string>* child_report);

}  // namespace agent_init
