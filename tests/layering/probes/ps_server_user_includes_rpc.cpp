// A program that starts a parameter server sees gradwire/ps/server.h, not the RPC layer below it.
#include "rpc/auth.h"
