// A parameter-server client as a part of an elastic::State (docs/elastic.md "Parameter servers"):
//
//   auto client = gradwire::ps::connect();       // an elastic trainer (GRADWIRE_ELASTIC_ID set)
//   RemoteEmbeddingBag embedding(client, ...);    // creates its sync table
//   gradwire::ps::ElasticMember tables(client);
//   state.add("tables", tables);                  // beside the model, optimizer, sampler
//
// At each commit the state keeps the sync tables' step; at each new generation (after the state
// was synced) the client regroups: it becomes the generation's rank among its size of trainers,
// its calls carry the generation's number as their attempt (so the servers discard what the
// rolled-back steps pushed), and every table is brought to the committed step with the new
// trainer count (Client::regroup). Commit right after client->step(): the servers keep no copy of
// older steps unless they checkpoint (then a commit at a checkpointed step is enough).
#pragma once

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstdint>
#include <memory>

#include "gradwire/ps/client.h"

namespace gradwire::ps {

class ElasticMember {
 public:
  explicit ElasticMember(std::shared_ptr<Client> client);

  // The step of the client's sync tables now (0 without any); InvalidArgument when they differ.
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);
  // Client::regroup(the loaded step, rank, world_size, generation).
  void reshard(int rank, int world_size, int64_t generation);

 private:
  int64_t sync_step() const;

  std::shared_ptr<Client> client_;
  int64_t step_ = 0;  // the last loaded step
};

}  // namespace gradwire::ps
