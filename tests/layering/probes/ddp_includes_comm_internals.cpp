// ddp sees the Communicator interface, never comm's internals (src/comm).
#include "c10d_communicator.h"
