// Elastic training (docs/elastic.md): when a worker dies the survivors go back to their last
// commit and go on without it, and new workers join at the next commit, with no restart of the
// job. Horovod elastic's semantics, in C++:
//
//   gradwire::elastic::State state;
//   state.add("model", model);            // a module, an optimizer, a data::DistributedSampler:
//   state.add("optimizer", optimizer);    // anything with save(OutputArchive&) const and
//   state.add("sampler", sampler);        // load(InputArchive&)
//   gradwire::elastic::run(state, [&](gradwire::elastic::Context& job) {
//     gradwire::ddp::DistributedDataParallel ddp(model, job.communicator());
//     while (auto batch = sampler.next(32)) {
//       ... forward, backward, optimizer.step() ...
//       state.value("step") += 1;
//       state.commit();                   // a copy in memory; new workers join here
//     }
//   });
//
// Under gradwire-run --elastic (or --nnodes MIN:MAX) every worker runs this. Each membership is a
// generation: the workers rendezvous through the job store the launcher hosts, the one with the
// latest commit becomes rank 0 and its state is broadcast (sync), the reset callbacks run, and
// the training function is called with the generation's communicator. When a collective fails
// because a peer died (PeerLostError, BackendError, or TimeoutError from the communicator), every
// survivor restores its last commit and they rendezvous again without it. When workers wait to
// join, the members learn it at a commit (rank 0 asks the store, one small allreduce tells all)
// and move to the next generation together, with nothing to roll back.
#pragma once

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gradwire/comm/communicator.h"
#include "gradwire/comm/job_store.h"
#include "gradwire/comm/world.h"

namespace gradwire::elastic {

// One membership of the job.
struct Generation {
  int64_t number = 0;
  int rank = 0;
  int size = 1;
  int local_rank = 0;  // among the members on this host
  int local_size = 1;
  // The members' worker ids, by rank (GRADWIRE_ELASTIC_ID, "<node>.<slot>.<incarnation>").
  std::vector<std::string> members;
};

// What the training function and the reset callbacks see.
class Context {
 public:
  Context(Generation generation, std::shared_ptr<Communicator> communicator)
      : generation_(std::move(generation)), communicator_(std::move(communicator)) {}
  const Generation& generation() const { return generation_; }
  int rank() const { return generation_.rank; }
  int size() const { return generation_.size; }
  const std::shared_ptr<Communicator>& communicator() const { return communicator_; }

 private:
  Generation generation_;
  std::shared_ptr<Communicator> communicator_;
};

// What is committed, restored and synchronised. Not thread safe: the training loop's thread.
class State {
 public:
  State();
  ~State();
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // Registers `object` under `name` (unique): anything with save(torch::serialize::OutputArchive&)
  // const and load(torch::serialize::InputArchive&), such as a module (or its holder), an
  // optimizer, a data::DistributedSampler. Optional members the state calls when present:
  //   reshard(int rank, int world_size)  after every sync(): the new membership (the sampler);
  //   reshard(int rank, int world_size, int64_t generation)  the same, with the generation's
  //                                      number (unique per membership of the job: keys, attempts);
  //   prepare_commit(Communicator&)      at every commit inside run(), on every member before the
  //                                      copy is taken: a collective that makes this rank's save()
  //                                      hold what all ranks did (data::ShardedRecordReader).
  // The object must outlive the State.
  template <typename T>
  void add(const std::string& name, T& object);
  template <typename T>
  void add(const std::string& name, const std::shared_ptr<T>& object) {
    add(name, *object);
  }

  // A named whole number kept with the state (epoch, step...); 0 until set.
  int64_t& value(const std::string& name) { return values_[name]; }

  // Keeps a copy of every registered object and value in memory. Inside run(): then asks
  // whether workers wait to join (collective: every rank commits at the same point) and, if so,
  // leaves the training function to take them in (the copy stays the state to go on from).
  void commit();
  // Goes back to the last commit (or to the state at the start of run() when there was none).
  void restore();
  // How many commits this state made or received (sync() adopts the root's count).
  int64_t commits() const { return commits_; }

  // Broadcasts the state from `root` of `communicator` (its last commit, or its current state when
  // it never committed): every rank then holds it, as committed. Collective. Then reshards, telling
  // the objects `generation` (run() passes its generation's number).
  void sync(Communicator& communicator, int root, int64_t generation = 0);

  // Internal, for run(): the membership whose commits also check for joiners, or nullptr.
  struct Binding;
  void bind(Binding* binding) { binding_ = binding; }

 private:
  struct Part {
    std::string name;
    std::function<void(torch::serialize::OutputArchive&)> save;
    std::function<void(torch::serialize::InputArchive&)> load;
    std::function<void(int rank, int world_size, int64_t generation)> reshard;  // may be empty
    std::function<void(Communicator&)> prepare_commit;                          // may be empty
  };
  void add_part(Part part);
  std::string serialize() const;
  void deserialize(const std::string& bytes);
  void reshard(int rank, int world_size, int64_t generation);

  std::vector<Part> parts_;
  std::map<std::string, int64_t> values_;
  std::string committed_;  // empty: never committed
  int64_t commits_ = 0;
  Binding* binding_ = nullptr;
};

struct RunOptions {
  // The job store. nullptr: connect to MASTER_ADDR:MASTER_PORT (gradwire-run --elastic hosts it).
  JobStore* store = nullptr;
  // This worker's id; empty: GRADWIRE_ELASTIC_ID, else "<host>.<pid>.0".
  std::string worker_id;
  // A generation needs at least min_workers and takes at most max_workers; nullopt:
  // GRADWIRE_ELASTIC_MIN / _MAX, else 1 and no limit.
  std::optional<int> min_workers;
  std::optional<int> max_workers;
  // Workers the first generation waits for; nullopt: GRADWIRE_ELASTIC_INITIAL, else WORLD_SIZE,
  // else min_workers.
  std::optional<int> initial_workers;
  // Backend and timeouts of every generation's communicator (InitOptions' rank, world size and
  // master fields are not used). The rendezvous timeout (InitOptions::rendezvous_timeout,
  // GRADWIRE_RENDEZVOUS_TIMEOUT) also bounds each generation's rendezvous: below min_workers
  // after it, run() throws TimeoutError naming who is missing.
  InitOptions init;
  // A launcher whose heartbeat (the store key elastic/agent/<node>) has not moved for this long
  // is taken as gone with its host, and so are its workers.
  std::chrono::milliseconds agent_silence{3000};
  // Called after every change of membership (and at the start), after the state was synced: to
  // scale the learning rate with the world size, say.
  std::vector<std::function<void(const Context&)>> on_reset;
  // One line per generation and per failure on stderr ("gradwire elastic: ...").
  bool verbose = true;
};

// Runs `train` until it returns, in as many generations as the membership needs (see the header
// comment). Throws what `train` throws other than a dead peer's errors; TimeoutError when a
// rendezvous stays below min_workers for the timeout.
void run(State& state, const std::function<void(Context&)>& train, RunOptions options = {});

// ---------------------------------------------------------------------------------------------

namespace detail {
template <typename T, typename = void>
struct has_reshard : std::false_type {};
template <typename T>
struct has_reshard<T, std::void_t<decltype(std::declval<T&>().reshard(0, 1))>> : std::true_type {};
template <typename T, typename = void>
struct has_generation_reshard : std::false_type {};
template <typename T>
struct has_generation_reshard<
    T, std::void_t<decltype(std::declval<T&>().reshard(0, 1, int64_t{0}))>> : std::true_type {};
template <typename T, typename = void>
struct has_prepare_commit : std::false_type {};
template <typename T>
struct has_prepare_commit<
    T, std::void_t<decltype(std::declval<T&>().prepare_commit(std::declval<Communicator&>()))>>
    : std::true_type {};
template <typename T, typename = void>
struct is_holder : std::false_type {};
template <typename T>
struct is_holder<T, std::void_t<decltype(std::declval<T&>().ptr())>> : std::true_type {};
}  // namespace detail

template <typename T>
void State::add(const std::string& name, T& object) {
  if constexpr (detail::is_holder<T>::value) {  // torch::nn::ModuleHolder: the module itself
    add(name, *object.ptr());
  } else {
    Part part;
    part.name = name;
    part.save = [&object](torch::serialize::OutputArchive& archive) { object.save(archive); };
    part.load = [&object](torch::serialize::InputArchive& archive) { object.load(archive); };
    if constexpr (detail::has_generation_reshard<T>::value) {
      part.reshard = [&object](int rank, int world_size, int64_t generation) {
        object.reshard(rank, world_size, generation);
      };
    } else if constexpr (detail::has_reshard<T>::value) {
      part.reshard = [&object](int rank, int world_size, int64_t) {
        object.reshard(rank, world_size);
      };
    }
    if constexpr (detail::has_prepare_commit<T>::value) {
      part.prepare_commit = [&object](Communicator& communicator) {
        object.prepare_commit(communicator);
      };
    }
    add_part(std::move(part));
  }
}

}  // namespace gradwire::elastic
