#include "gradwire/common/version.h"

namespace gradwire {
std::string version() { return GRADWIRE_VERSION_STRING; }
}  // namespace gradwire
