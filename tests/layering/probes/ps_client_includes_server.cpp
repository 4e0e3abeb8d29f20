// The trainers' client library never sees the server's internals.
#include "ps/server/service.h"
