// The parameter-server service's messages <-> gradwire::ps types, shared by the server and the
// client: table configs in both directions and what differs between two configs (for "exists
// with ..." errors); how many bytes a shard needs is shard_bytes() of gradwire/ps/table.h. Pure
// functions, no RPC calls.
//
// Thread safety: pure. Blocking: none.
#pragma once

#include <cstdint>
#include <string>

#include "gradwire/ps/table.h"
#include "ps/core/table_shard.h"
#include "rpc/proto/ps.pb.h"

namespace gradwire::ps {

namespace v1 = ::gradwire::ps::v1;

// Every field, enums mapped one to one.
v1::TableConfig to_message(const TableConfig& config);
// The inverse. InvalidArgument naming the field for an unspecified or unknown enum value; the
// values themselves are checked by validate().
TableConfig from_message(const v1::TableConfig& message);

// A call's attempt (the message's defaults, 0 and 0, when it has none). InvalidArgument for a
// negative restart count.
Attempt from_message(const v1::Attempt& message);
v1::Attempt to_message(const Attempt& attempt);

// At most `limit` characters of a name taken from a request, for messages: "abc..." when cut.
std::string quoted_name(const std::string& name, size_t limit = 64);

// The first fields in which `existing` and `asked` differ, as "300 x 64, asked 300 x 32" or
// "mode sync, asked async; num_trainers 2, asked 3". Empty when no field differs.
std::string describe_difference(const TableConfig& existing, const TableConfig& asked);

}  // namespace gradwire::ps
