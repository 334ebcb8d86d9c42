// Fault injection for the crash-safety tests. Every durable step of a
// multi-step change to the volume calls FaultPoint(). Test builds
// (AGENT_INIT_FAULT_INJECTION) count the calls and SIGKILL the process at the
// step named by the AGENT_INIT_FAULT_STEP environment variable; release
// builds compile the calls away, so no environment variable can kill them.
#pragma once

#include <string_view>

namespace agent_init {

#ifdef AGENT_INIT_FAULT_INJECTION
/// Counts a step; kills the process when it is the chosen one.
void FaultPoint(std::string_view step);
/// Whether the test switch AGENT_INIT_TEST_<name> is set: a test turns a
/// mechanism off to show that its assertions fail without it.
bool TestSwitch(std::string_view name);
/// At the step AGENT_INIT_TEST_HOOK_STEP names, runs the shell command
/// AGENT_INIT_TEST_HOOK and waits for it: a race a test must win every
/// time (an entry swapped between two system calls) made certain. The
/// command finds `path` (what the step is at) in AGENT_INIT_TEST_HOOK_PATH.
void TestHook(std::string_view step, std::string_view path = {});
/// After a syncfs(2) of the filesystem that holds the directory `fd`: a
/// lookup of the name AGENT_INIT_TEST_SYNCFS_NAME in it. FUSE does not pass
/// syncfs on (the kernel asks only virtiofs), and the power-loss test
/// filesystem (tests/support/powerfs) learns of it this way.
void AnnounceSyncfs(int fd);
#else
inline void FaultPoint(std::string_view) {}
inline bool TestSwitch(std::string_view) { return false; }
inline void TestHook(std::string_view, std::string_view = {}) {}
inline void AnnounceSyncfs(int) {}
#endif

}  // namespace agent_init
