// A user's program (gradwire::gradwire) sees interfaces, not plumbing: byte order, futexes, process
// liveness and enum name tables are common's internal headers, not installed ones.
#include "gradwire/common/futex.h"
