// The control of the internal probes: internal headers compile for the targets that link a
// layer's _internal target (the layers above it and the tests).
#include "common/byte_order.h"
#include "common/enum_names.h"
#include "common/futex.h"
#include "common/process.h"
#include "ddp/bucket_assignment.h"
#if GRADWIRE_PROBE_PS
#include "ps/messages/service_messages.h"
#include "rpc/wire.h"
#endif

int layering_probe_internal_allowed() { return 0; }
