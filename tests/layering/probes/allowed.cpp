// The control: headers each layer may use compile from the layers that link them, so a failure of
// the other probes is the wall, not a broken probe.
#include "gradwire/comm/communicator.h"
#include "gradwire/common/error.h"
#if GRADWIRE_PROBE_PS
#include "gradwire/ps.h"
#endif

int layering_probe_allowed() { return 0; }
