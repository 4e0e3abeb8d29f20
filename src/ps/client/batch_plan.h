// Data calls packed into batches (internal to src/ps/client): what each server gets in one round
// trip. Parts are added in the order the server must see them per server (pushes before the steps
// they belong to); a server's parts go into one batch while it stays within that server's limits,
// then into the next. Pure.
//
// Note [batched calls]: the client sends a server one Batch call per round trip carrying what it
// has for that server at that moment (docs/ps.md "Batched calls"): the pushes deferred to it
// (ClientOptions::defer_pushes), the steps of all its tables, its share of the lookups of several
// tables (lookup_many). The server runs the parts through the handlers of their own kind, pushes
// first, then steps, then lookups (Note [batch parts] in ps/server/service_batch.cpp), so a
// batch behaves as its parts sent one after another. Lookups, pushes and steps travel in no other
// way (Note [call routes] in routes.h). A batch is only retried on UNAVAILABLE when it carries
// neither pushes nor steps (a push that reached the server must not be applied twice).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "rpc/proto/ps.pb.h"

namespace gradwire::ps {

// How large one batch to a server may be: its request, and the answer it asks for.
struct BatchLimits {
  int64_t request_bytes = int64_t{4} << 20;
  int64_t answer_bytes = int64_t{64} << 20;
};

// Where a step or lookup part went: its batch, and its index among that batch's steps or lookups.
struct PartPlace {
  size_t batch = 0;
  int index = 0;
};

class BatchPlan {
 public:
  struct Batch {
    int server = 0;
    v1::BatchRequest request;
    int64_t request_bytes = 0;
    int64_t answer_bytes = 0;  // what its lookups' answers take, with room for their framing
    bool last = true;          // the last batch to its server (the others run before it)
  };

  // `limits(server)`: the limits of a batch to `server`. A part larger than them alone still
  // gets a batch of its own (the caller cut its parts to fit a call).
  explicit BatchPlan(std::function<BatchLimits(int server)> limits);

  void add(int server, v1::PushRequest push);
  PartPlace add(int server, v1::StepRequest step);
  // `answer_bytes`: the size of the lookup's answer (its rows).
  PartPlace add(int server, v1::LookupRequest lookup, int64_t answer_bytes);

  bool empty() const { return batches_.empty(); }
  // Whether some server gets more than one batch (then the ones not last must be answered
  // before the last ones go out, where order matters).
  bool split() const;
  std::vector<Batch>& batches() { return batches_; }
  const std::vector<Batch>& batches() const { return batches_; }

 private:
  // The batch to `server` that takes a part of these sizes: its open one, or a new one.
  size_t batch_for(int server, int64_t request_bytes, int64_t answer_bytes);

  std::function<BatchLimits(int)> limits_;
  std::map<int, size_t> open_;  // per server, its open (last) batch
  std::vector<Batch> batches_;
};

}  // namespace gradwire::ps
