// ddp sees the Communicator interface, never comm's internals (src/comm).
#include "comm/core/c10d_communicator.h"
