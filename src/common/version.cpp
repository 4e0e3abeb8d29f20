#include "gradwire/common/version.h"

namespace gradwire {
std::string version() { return GRADWIRE_VERSION_STRING; }
std::string built_with() { return GRADWIRE_BUILT_WITH; }
}  // namespace gradwire
