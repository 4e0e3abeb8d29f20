// common is the bottom layer: it cannot see comm.
#include "gradwire/comm/communicator.h"
