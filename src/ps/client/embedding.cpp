// RemoteEmbeddingBag, RemoteEmbeddingBagCollection and RemoteEmbedding: the unique rows of a batch
// come from the servers as a leaf tensor (one lookup_many for a collection's tables); autograd
// pools them (embedding_bag / index_select) and a hook on the leaf pushes its gradient, already
// summed over duplicate ids, to the owners.
#include "gradwire/ps/embedding.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "device_copy.h"
#include "gradwire/common/error.h"
#include "ps/core/id_routing.h"

namespace gradwire::ps {
namespace {

// The looked-up `rows` (on the host) on `device`, pushing d(rows) for `unique` ids when backward
// reaches them (the batch's unique rows, a leaf); without the hook when gradients are off.
at::Tensor with_push_hook(const std::shared_ptr<Client>& client, const std::string& table,
                          const at::Tensor& unique, const at::Tensor& host_rows,
                          const c10::Device& device) {
  at::Tensor rows = to_module_device(host_rows, device);
  if (!torch::autograd::GradMode::is_enabled()) return rows;
  rows.requires_grad_(true);
  rows.register_hook([client, table, unique](const at::Tensor& grad) {
    client->push(table, unique, to_host(grad));
    return at::Tensor();  // leave the gradient as it is
  });
  return rows;
}

// A bag module's input: the ids, each bag's first position, and the ids without duplicates.
struct BagInput {
  at::Tensor offsets;
  UniqueIds unique;
};

// `input` and `offsets` as torch::nn::EmbeddingBag takes them, checked against `options`.
BagInput bag_input(const RemoteEmbeddingBagOptions& options, const at::Tensor& input,
                   const at::Tensor& offsets) {
  const std::string& name = options.table.name;
  at::Tensor ids = input.cpu();
  at::Tensor bag_offsets = offsets.defined() ? offsets.cpu() : offsets;
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
  check_ids(ids, options.table.num_rows, "RemoteEmbeddingBag lookup of", name);
  if (bag_offsets.scalar_type() != at::kLong) bag_offsets = bag_offsets.to(at::kLong);
  return BagInput{bag_offsets, unique_ids(ids)};
}

// The bags pooled from the batch's unique rows, on the rows' device.
at::Tensor pool(const RemoteEmbeddingBagOptions& options, const BagInput& input,
                const at::Tensor& rows) {
  const int64_t mode = options.mode == BagMode::kSum ? 0 : 1;
  const c10::Device device = rows.device();
  return std::get<0>(at::embedding_bag(rows, to_module_device(input.unique.inverse, device),
                                       to_module_device(input.offsets, device),
                                       /*scale_grad_by_freq=*/false, mode, /*sparse=*/false));
}

}  // namespace

void RemoteRowsModule::to(torch::Device device, torch::Dtype /*rows stay float32*/,
                          bool /*non_blocking*/) {
  device_ = device;
}
void RemoteRowsModule::to(torch::Dtype /*rows stay float32*/, bool /*non_blocking*/) {}
void RemoteRowsModule::to(torch::Device device, bool /*non_blocking*/) { device_ = device; }

RemoteEmbeddingBagImpl::RemoteEmbeddingBagImpl(std::shared_ptr<Client> client,
                                               RemoteEmbeddingBagOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
  GRADWIRE_CHECK(client_ != nullptr);
  client_->create_table(options_.table);
}

at::Tensor RemoteEmbeddingBagImpl::forward(const at::Tensor& input, const at::Tensor& offsets) {
  const BagInput bags = bag_input(options_, input, offsets);
  const std::string& name = options_.table.name;
  return pool(options_, bags,
              with_push_hook(client_, name, bags.unique.ids,
                             client_->lookup(name, bags.unique.ids), device()));
}

RemoteEmbeddingBagCollectionImpl::RemoteEmbeddingBagCollectionImpl(
    std::shared_ptr<Client> client, std::vector<RemoteEmbeddingBagOptions> tables)
    : client_(std::move(client)), tables_(std::move(tables)) {
  GRADWIRE_CHECK(client_ != nullptr);
  for (size_t i = 0; i < tables_.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (tables_[i].table.name == tables_[j].table.name) {
        throw InvalidArgument("gradwire: RemoteEmbeddingBagCollection: table '" +
                              tables_[i].table.name + "' is named twice (tables " +
                              std::to_string(j) + " and " + std::to_string(i) + ")");
      }
    }
  }
  for (const RemoteEmbeddingBagOptions& options : tables_) client_->create_table(options.table);
}

std::vector<at::Tensor> RemoteEmbeddingBagCollectionImpl::forward(
    const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& offsets) {
  if (inputs.size() != tables_.size() || (!offsets.empty() && offsets.size() != tables_.size())) {
    throw InvalidArgument("gradwire: RemoteEmbeddingBagCollection of " +
                          std::to_string(tables_.size()) + " tables got " +
                          std::to_string(inputs.size()) + " inputs and " +
                          std::to_string(offsets.size()) + " offsets; give one input per table " +
                          "(and one offsets tensor per table, or none when all inputs are 2-D)");
  }
  std::vector<BagInput> bags;
  std::vector<TableIds> lookups;
  for (size_t i = 0; i < tables_.size(); ++i) {
    bags.push_back(bag_input(tables_[i], inputs[i], offsets.empty() ? at::Tensor() : offsets[i]));
    lookups.push_back({tables_[i].table.name, bags.back().unique.ids});
  }
  const std::vector<at::Tensor> rows = client_->lookup_many(lookups);
  std::vector<at::Tensor> pooled;
  for (size_t i = 0; i < tables_.size(); ++i) {
    pooled.push_back(pool(tables_[i], bags[i],
                          with_push_hook(client_, lookups[i].table, lookups[i].ids, rows[i],
                                         device())));
  }
  return pooled;
}

RemoteEmbeddingImpl::RemoteEmbeddingImpl(std::shared_ptr<Client> client, TableConfig table)
    : client_(std::move(client)), table_(std::move(table)) {
  GRADWIRE_CHECK(client_ != nullptr);
  client_->create_table(table_);
}

at::Tensor RemoteEmbeddingImpl::forward(const at::Tensor& ids) {
  const at::Tensor host_ids = ids.cpu();
  check_ids(host_ids, table_.num_rows, "RemoteEmbedding lookup of", table_.name);
  const UniqueIds unique = unique_ids(host_ids);
  const at::Tensor rows = with_push_hook(client_, table_.name, unique.ids,
                                         client_->lookup(table_.name, unique.ids), device());
  std::vector<int64_t> shape = ids.sizes().vec();
  shape.push_back(table_.dim);
  return rows.index_select(0, to_module_device(unique.inverse.reshape({-1}), rows.device()))
      .view(shape);
}

}  // namespace gradwire::ps
