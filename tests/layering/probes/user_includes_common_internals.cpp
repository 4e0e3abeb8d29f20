// Nor does a user's program reach common's internal headers by their internal path.
#include "common/futex.h"
