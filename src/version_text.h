#pragma once

#include <string>

namespace agent_init {

/// What `--version` prints: agent-init's version, the commit it was built
/// from and the libmount it runs with (the library's own version, and for a
/// static build the util-linux source package it came from).
std::string VersionText();

}  // namespace agent_init
