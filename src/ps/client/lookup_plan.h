// A lookup cut into calls (internal to src/ps/client): which server gets which ids, the requests,
// and the answers put back in the caller's order. Pure but for the calls' answers it reads.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "client_calls.h"
#include "gradwire/ps/table.h"
#include "ps/core/id_routing.h"

namespace gradwire::ps {

// A lookup cut into calls: the unique ids, and each call's server, ids and their positions.
struct LookupPlan {
  TableConfig config;
  bool unique_already = false;  // the caller's ids were unique and sorted
  UniqueIds unique;
  std::vector<RoutedIds> shares;

  std::vector<int> servers() const {
    std::vector<int> out;
    for (const RoutedIds& share : shares) out.push_back(share.server);
    return out;
  }
};

// The plan of a lookup of `ids` in `config`'s table over `num_servers` servers, each call's
// request and answer within the byte limits. InvalidArgument for ids that are not 1-D int64 in
// range.
LookupPlan plan_lookup(const TableConfig& config, const std::string& name, const at::Tensor& ids,
                       int num_servers, int64_t max_request_bytes, int64_t max_message_bytes);

// One request per share of the plan; `wire` is the answer's dtype (float32, float16, bfloat16).
std::vector<v1::LookupRequest> lookup_requests(const std::string& name, LookupPlan& plan,
                                               at::ScalarType wire = at::kFloat);

// One share's answer: its rows and the server that sent them.
struct ShareAnswer {
  const v1::LookupResponse* response = nullptr;
  const std::string* address = nullptr;
};

// The answers' rows (answers[i] for the plan's share i) in the caller's order (float32).
// BackendError naming the server for an answer of the wrong shape.
at::Tensor assemble_rows(const std::string& name, const LookupPlan& plan,
                         const std::vector<ShareAnswer>& answers);

}  // namespace gradwire::ps
