#pragma once

#include <string>

namespace gradwire {
// gradwire's version, "MAJOR.MINOR.PATCH". (The libtorch version is in gradwire/comm/world.h:
// the common layer does not depend on torch.)
std::string version();
}  // namespace gradwire
