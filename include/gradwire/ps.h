// Parameter servers: tables, the server, the client and the remote embedding modules.
#pragma once

#include "gradwire/ps/client.h"
#include "gradwire/ps/dense.h"
#include "gradwire/ps/dense_layout.h"
#include "gradwire/ps/elastic_member.h"
#include "gradwire/ps/embedding.h"
#include "gradwire/ps/server.h"
#include "gradwire/ps/table.h"
