// rpc offers its headers through gradwire_rpc_internal only: linking gradwire_rpc shows none.
#include "rpc/wire.h"
