// Lookups cut into calls and answers put together (lookup_plan.h).
#include "lookup_plan.h"

#include <algorithm>
#include <cstring>

#include "gradwire/common/error.h"
#include "rpc/wire.h"

namespace gradwire::ps {

// Rows `positions` of the contiguous matrix `rows` (n x dim), as a new tensor of its dtype; the
// whole matrix itself when `positions` are all its rows in order.
at::Tensor gather_rows(const at::Tensor& rows, const std::vector<int64_t>& positions) {
  const int64_t count = static_cast<int64_t>(positions.size());
  if (count == rows.size(0) && (count == 0 || positions.back() == count - 1)) {
    bool in_order = true;
    for (int64_t i = 0; i < count && in_order; ++i)
      in_order = positions[static_cast<size_t>(i)] == i;
    if (in_order) return rows;
  }
  at::Tensor out = at::empty({count, rows.size(1)}, rows.options());
  gather_rows_into(rows, positions, out);
  return out;
}

void gather_rows_into(const at::Tensor& rows, const std::vector<int64_t>& positions,
                      const at::Tensor& out) {
  const int64_t count = static_cast<int64_t>(positions.size());
  GRADWIRE_CHECK(rows.dim() == 2 && rows.is_contiguous() && out.is_contiguous() &&
                 out.scalar_type() == rows.scalar_type() && out.size(0) == count &&
                 out.size(1) == rows.size(1));
  const int64_t row_bytes = rows.size(1) * static_cast<int64_t>(rows.element_size());
  const char* from = static_cast<const char*>(rows.data_ptr());
  char* to = static_cast<char*>(out.data_ptr());
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(to + i * row_bytes, from + positions[static_cast<size_t>(i)] * row_bytes,
                static_cast<size_t>(row_bytes));
  }
}

LookupPlan plan_lookup(const TableConfig& config_in, const std::string& name, const at::Tensor& ids,
                       int num_servers, int64_t max_request_bytes, int64_t max_message_bytes) {
  LookupPlan plan;
  plan.config = config_in;
  const TableConfig& config = plan.config;
  if (ids.dim() != 1) {
    check_ids(ids, config.num_rows, "lookup of", name);
    throw InvalidArgument("gradwire: lookup of table '" + name + "': ids must be 1-D, got " +
                          std::to_string(ids.dim()) + " dimensions");
  }
  const at::Tensor dense = ids.contiguous();
  check_ids(dense, config.num_rows, "lookup of", name);
  // RemoteEmbeddingBag and DenseModel pass unique sorted ids: no deduplication needed then.
  plan.unique_already = strictly_increasing(dense);
  plan.unique = plan.unique_already ? UniqueIds{dense, at::Tensor()} : unique_ids(dense);
  // Each call's request (8 bytes an id) and answer (dim floats an id) within the limits.
  const int64_t ids_per_call = std::max<int64_t>(
      1, std::min((max_request_bytes - kRequestOverhead) / 8,
                  (max_message_bytes - kRequestOverhead) / std::max<int64_t>(1, config.dim * 4)));
  plan.shares = split_shares(route_ids(plan.unique.ids.contiguous(), num_servers), ids_per_call);
  return plan;
}

std::vector<v1::LookupRequest> lookup_requests(const std::string& name, LookupPlan& plan,
                                               at::ScalarType wire) {
  if (wire != at::kFloat && wire != at::kHalf && wire != at::kBFloat16) {
    throw InvalidArgument("gradwire: lookup of table '" + name + "': rows travel as float32, " +
                          "float16 or bfloat16, not " + c10::toString(wire));
  }
  std::vector<v1::LookupRequest> requests(plan.shares.size());
  for (size_t i = 0; i < plan.shares.size(); ++i) {
    requests[i].set_table(name);
    requests[i].set_rows_dtype(rpc::to_wire_dtype(wire, "lookup.rows"));
    rpc::encode_tensor(view_of(plan.shares[i].ids), requests[i].mutable_ids(), "lookup.ids");
  }
  return requests;
}

at::Tensor assemble_rows(const std::string& name, const LookupPlan& plan,
                         const std::vector<ShareAnswer>& answers) {
  const int64_t dim = plan.config.dim;
  at::Tensor rows = at::empty({plan.unique.ids.numel(), dim}, at::kFloat);
  float* to = rows.data_ptr<float>();
  for (size_t i = 0; i < plan.shares.size(); ++i) {
    rpc::TensorExpectation expect;
    expect.dtype = at::kFloat;
    expect.rank = 2;
    expect.in_place = true;  // copied into place below, while the answer lives
    const v1::Tensor& answer = answers[i].response->rows();
    const at::Tensor got = rpc::decode_tensor(answer, "lookup.rows", expect);
    const auto count = static_cast<int64_t>(plan.shares[i].ids.size());
    if (got.size(0) != count || got.size(1) != dim) {
      throw BackendError("gradwire: lookup of table '" + name + "': server " + *answers[i].address +
                         " answered " + std::to_string(got.size(0)) + " x " +
                         std::to_string(got.size(1)) + " rows for " + std::to_string(count) +
                         " ids of dim " + std::to_string(dim));
    }
    // One server's answer for unique ids in order (a dense pull): the rows copied out once.
    if (plan.shares.size() == 1 && plan.unique_already && count == rows.size(0)) {
      const bool aliases_answer = got.data_ptr() == static_cast<const void*>(answer.data().data());
      return aliases_answer ? got.clone() : got;
    }
    const float* from = got.data_ptr<float>();
    for (int64_t r = 0; r < count; ++r) {
      std::memcpy(to + plan.shares[i].positions[static_cast<size_t>(r)] * dim, from + r * dim,
                  static_cast<size_t>(dim) * sizeof(float));
    }
  }
  return plan.unique_already ? rows : rows.index_select(0, plan.unique.inverse);
}

}  // namespace gradwire::ps
