// The RecordIO layer depends on common only.
#include "gradwire/comm/world.h"
