// Which host this process runs on, as the shared-memory paths decide it: comm's backend choice
// ("auto", hierarchical) and the parameter servers' shared-memory transport (docs/ps.md "Shared
// memory").
//
// The identity is GRADWIRE_HOST_ID when set and non-empty (tests simulate several hosts on one
// machine with it), else "<hostname>/<boot id>" (/proc/sys/kernel/random/boot_id), so that two
// machines that share a hostname, or a container and its host, are not taken for one another.
#pragma once

#include <string>

#include "gradwire/common/env.h"

namespace gradwire {

// This process's host identity (see above). Reads the hostname and the boot id file.
std::string local_host_identity(const EnvMap& env);

}  // namespace gradwire
