#pragma once

#include <string>

namespace gradwire {
// gradwire's version, "MAJOR.MINOR.PATCH". (The libtorch version is in gradwire/comm/world.h:
// the common layer does not depend on torch.)
std::string version();
// What this gradwire was built against: "libtorch 2.15.0 with CUDA, NCCL backend" or
// "libtorch 1.13.0, CPU only".
std::string built_with();
}  // namespace gradwire
