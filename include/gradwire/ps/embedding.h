// Embedding modules whose rows live on parameter servers, usable inside autograd like
// torch::nn::EmbeddingBag and torch::nn::Embedding (docs/ps.md).
//
// forward looks the rows up on every owning server in parallel (ids deduplicated); backward pushes
// the rows' gradients (duplicates summed) to their owners without waiting. Client::step() after the
// optimizer step flushes the pushes and, in sync mode, waits until the servers applied the step:
//
//   using namespace gradwire::ps;
//   auto client = connect();                             // GRADWIRE_PS_ADDRS, the job token
//   RemoteEmbeddingBag bags(client, RemoteEmbeddingBagOptions{table, BagMode::kMean});
//   loss = loss_fn(dense(bags(ids, offsets)), target);
//   loss.backward();                                     // pushes the embedding gradients
//   optimizer.step();  client->step();
//
// The modules hold no local parameters: the table's optimizer runs on the servers. On a CUDA
// module (`module->to(torch::kCUDA)`, or a parent's `to`), forward returns its rows on that device,
// copied through pinned host buffers asynchronously on the current stream, and backward brings
// the gradient back the same way; the ids may be on either device (the host routes them). Rows
// stay float32 whatever dtype `to` names. Thread safety: as torch modules (one forward/backward
// at a time per module); the client may be shared.
#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <vector>

#include "gradwire/ps/client.h"
#include "gradwire/ps/table.h"

namespace gradwire::ps {

enum class BagMode { kSum, kMean };

// The base of the remote modules: it has no parameters, so it remembers the device `to` names,
// where forward puts its rows.
class RemoteRowsModule : public torch::nn::Module {
 public:
  void to(torch::Device device, torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Device device, bool non_blocking = false) override;
  // Where forward puts its rows (the CPU until `to` names a device).
  const torch::Device& device() const { return device_; }

 private:
  torch::Device device_{torch::kCPU};
};

struct RemoteEmbeddingBagOptions {
  // The table, created on the servers by the constructor (or checked to exist with this config).
  TableConfig table;
  // How the rows of a bag are pooled.
  BagMode mode = BagMode::kSum;
};

class RemoteEmbeddingBagImpl : public RemoteRowsModule {
 public:
  // Creates (or checks) the table on every server. Blocks for that call.
  RemoteEmbeddingBagImpl(std::shared_ptr<Client> client, RemoteEmbeddingBagOptions options);

  // As torch::nn::EmbeddingBag: `input` 1-D ids with `offsets` (the start of each bag), or 2-D
  // [bags, ids per bag] with no offsets. Returns [bags, dim]; an empty bag gives zeros.
  at::Tensor forward(const at::Tensor& input, const at::Tensor& offsets = {});

  const RemoteEmbeddingBagOptions& options() const { return options_; }
  Client& client() const { return *client_; }

 private:
  std::shared_ptr<Client> client_;
  RemoteEmbeddingBagOptions options_;
};
TORCH_MODULE(RemoteEmbeddingBag);

// Several RemoteEmbeddingBags that look their rows up together: one Client::lookup_many per
// forward, so each server gets one call for all the tables it serves (docs/ps.md "Batched
// calls"), where separate modules would make one call per table. Backward pushes each table's
// gradient as a RemoteEmbeddingBag does; with ClientOptions::defer_pushes they all travel with
// the step. What it computes is exactly what one RemoteEmbeddingBag per table computes.
class RemoteEmbeddingBagCollectionImpl : public RemoteRowsModule {
 public:
  // Creates (or checks) every table on every server. Blocks for those calls. Table names must
  // differ (InvalidArgument otherwise).
  RemoteEmbeddingBagCollectionImpl(std::shared_ptr<Client> client,
                                   std::vector<RemoteEmbeddingBagOptions> tables);

  // inputs[i] (and offsets[i] when given) for table i, as RemoteEmbeddingBag::forward takes them;
  // `offsets` empty when every input is 2-D. Returns [bags, dim] per table, in table order.
  std::vector<at::Tensor> forward(const std::vector<at::Tensor>& inputs,
                                  const std::vector<at::Tensor>& offsets = {});

  const std::vector<RemoteEmbeddingBagOptions>& tables() const { return tables_; }

 private:
  std::shared_ptr<Client> client_;
  std::vector<RemoteEmbeddingBagOptions> tables_;
};
TORCH_MODULE(RemoteEmbeddingBagCollection);

class RemoteEmbeddingImpl : public RemoteRowsModule {
 public:
  // Creates (or checks) the table on every server. Blocks for that call.
  RemoteEmbeddingImpl(std::shared_ptr<Client> client, TableConfig table);

  // Rows of `ids` (int64, any shape): ids.sizes() + [dim].
  at::Tensor forward(const at::Tensor& ids);

  const TableConfig& table() const { return table_; }

 private:
  std::shared_ptr<Client> client_;
  TableConfig table_;
};
TORCH_MODULE(RemoteEmbedding);

}  // namespace gradwire::ps
