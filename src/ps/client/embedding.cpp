// RemoteEmbeddingBag and RemoteEmbedding: the unique rows of a batch come from the servers as a
// leaf tensor; autograd pools them (embedding_bag / index_select) and a hook on the leaf pushes
// its gradient, already summed over duplicate ids, to the owners.
#include "gradwire/ps/embedding.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "gradwire/common/error.h"
#include "ps/core/id_routing.h"

namespace gradwire::ps {
namespace {

// The batch's unique rows; when gradients are on, backward pushes d(rows) for `unique` ids.
at::Tensor remote_rows(const std::shared_ptr<Client>& client, const std::string& table,
                       const at::Tensor& unique) {
  at::Tensor rows = client->lookup(table, unique);
  if (!torch::autograd::GradMode::is_enabled()) return rows;
  rows.requires_grad_(true);
  rows.register_hook([client, table, unique](const at::Tensor& grad) {
    client->push(table, unique, grad.contiguous());
    return at::Tensor();  // leave the gradient as it is
  });
  return rows;
}

}  // namespace

RemoteEmbeddingBagImpl::RemoteEmbeddingBagImpl(std::shared_ptr<Client> client,
                                               RemoteEmbeddingBagOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
  GRADWIRE_CHECK(client_ != nullptr);
  client_->create_table(options_.table);
}

at::Tensor RemoteEmbeddingBagImpl::forward(const at::Tensor& input, const at::Tensor& offsets) {
  const std::string& name = options_.table.name;
  at::Tensor ids = input;
  at::Tensor bag_offsets = offsets;
  if (input.dim() == 2) {
    if (offsets.defined()) {
      throw InvalidArgument("gradwire: RemoteEmbeddingBag '" + name +
                            "': offsets must be empty when input is 2-D (each row is a bag)");
    }
    ids = input.reshape({-1});
    bag_offsets = at::arange(0, ids.numel(), std::max<int64_t>(input.size(1), 1), at::kLong);
    if (input.size(1) == 0) bag_offsets = at::zeros({input.size(0)}, at::kLong);
  } else if (input.dim() != 1 || !offsets.defined() || offsets.dim() != 1) {
    throw InvalidArgument(
        "gradwire: RemoteEmbeddingBag '" + name +
        "': expected 1-D input with 1-D offsets, or 2-D input; got input " +
        c10::str(input.sizes()) + " and " +
        (offsets.defined() ? "offsets " + c10::str(offsets.sizes()) : std::string("no offsets")));
  }
  check_ids(ids, options_.table.num_rows, "RemoteEmbeddingBag lookup of", name);
  if (bag_offsets.scalar_type() != at::kLong) bag_offsets = bag_offsets.to(at::kLong);
  const UniqueIds unique = unique_ids(ids);
  const at::Tensor rows = remote_rows(client_, name, unique.ids);
  const int64_t mode = options_.mode == BagMode::kSum ? 0 : 1;
  return std::get<0>(at::embedding_bag(rows, unique.inverse, bag_offsets,
                                       /*scale_grad_by_freq=*/false, mode, /*sparse=*/false));
}

RemoteEmbeddingImpl::RemoteEmbeddingImpl(std::shared_ptr<Client> client, TableConfig table)
    : client_(std::move(client)), table_(std::move(table)) {
  GRADWIRE_CHECK(client_ != nullptr);
  client_->create_table(table_);
}

at::Tensor RemoteEmbeddingImpl::forward(const at::Tensor& ids) {
  check_ids(ids, table_.num_rows, "RemoteEmbedding lookup of", table_.name);
  const UniqueIds unique = unique_ids(ids);
  const at::Tensor rows = remote_rows(client_, table_.name, unique.ids);
  std::vector<int64_t> shape = ids.sizes().vec();
  shape.push_back(table_.dim);
  return rows.index_select(0, unique.inverse.reshape({-1})).view(shape);
}

}  // namespace gradwire::ps
