// comm sits below ddp: it cannot see ddp.
#include "gradwire/ddp/ddp.h"
