// Umbrella header: everything a gradwire user includes.
#pragma once

#include "gradwire/comm/communicator.h"
#include "gradwire/comm/world.h"
#include "gradwire/common/error.h"
#include "gradwire/common/version.h"
#include "gradwire/ddp/comm_hook.h"
#include "gradwire/ddp/ddp.h"
#include "gradwire/ddp/join.h"
#include "gradwire/elastic/elastic.h"
