// The Fashion-MNIST job: a CNN (model.h) trained with gradwire's DistributedDataParallel over
// RecordIO files read by gradwire::data::ShardedRecordReader, with checkpoints and resume.
//
//   build/bin/gradwire-recordio convert $D/train-images-idx3-ubyte.gz \
//       $D/train-labels-idx1-ubyte.gz data/fashion/train --files 4
//   build/bin/gradwire-recordio convert $D/t10k-images-idx3-ubyte.gz \
//       $D/t10k-labels-idx1-ubyte.gz data/fashion/test
//   build/bin/gradwire-run -n 2 build/bin/example-fashion-mnist --data data/fashion
//
// Every rank reads its share of the training chunks (--partition static) or claims chunks from
// the job's store (dynamic); a step ends the epoch as soon as one rank has no full batch left
// (an all-reduced flag), so all ranks take the same steps. After each epoch the test set is
// evaluated across ranks (each its static share, counts all-reduced) and rank 0 prints
// `epoch E test accuracy XX.XX%`; at the end every rank prints `rank R parameter checksum X`.
// Flags: options.h; behaviour, checkpoints and measured results: docs/data.md.
//
// Test only: GRADWIRE_TEST_KILL_AT_STEP=S makes the last rank SIGKILL itself before global step
// S on the first attempt (TORCHELASTIC_RESTART_COUNT 0 or unset); the kill-and-resume test uses
// it to crash a worker mid-epoch.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>

#include "checkpoint.h"
#include "data.h"
#include "gradwire/data/store_counter.h"
#include "gradwire/ddp/ddp.h"
#include "gradwire/gradwire.h"
#include "lr_schedule.h"
#include "model.h"
#include "options.h"
#include "progress.h"

namespace fashion_mnist {
namespace {

using gradwire::Communicator;
using gradwire::ReduceOp;
using gradwire::data::Partition;

constexpr int64_t kEvalBatch = 500;

// All-reduces `values` (float32: exact for counts below 2^24) with `op`.
torch::Tensor all_reduce(Communicator& comm, std::vector<float> values, ReduceOp op) {
  torch::Tensor tensor = torch::tensor(values, torch::kFloat32);
  comm.allreduce(tensor, op)->wait();
  return tensor;
}

// The step before which this rank kills itself (test only), or 0.
int64_t test_kill_step(int rank, int world_size) {
  const char* step = std::getenv("GRADWIRE_TEST_KILL_AT_STEP");
  const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
  const bool first_attempt = restart == nullptr || std::string(restart) == "0";
  if (step == nullptr || !first_attempt || rank != world_size - 1) return 0;
  return std::atoll(step);
}

// Test accuracy over the whole test set, in percent, the same on every rank.
double evaluate(ConvNet& model, BatchReader& test, uint64_t epoch, Communicator& comm) {
  torch::NoGradGuard no_grad;
  model->eval();
  test.reader().start_epoch(epoch);
  float correct = 0;
  float total = 0;
  while (std::optional<Batch> batch = test.next_batch(kEvalBatch, /*allow_partial=*/true)) {
    torch::Tensor predicted = model->forward(batch->images).argmax(1);
    correct += predicted.eq(batch->labels).sum().item<float>();
    total += static_cast<float>(batch->labels.size(0));
  }
  model->train();
  torch::Tensor sums = all_reduce(comm, {correct, total}, ReduceOp::kSum);
  return 100.0 * sums[0].item<double>() / std::max(1.0, sums[1].item<double>());
}

int run(const JobOptions& options) {
  auto world = gradwire::init();
  std::shared_ptr<Communicator> comm = world->communicator();
  const int rank = comm->rank();
  const int ranks = comm->size();
  if (options.batch_size % ranks != 0) {
    throw gradwire::InvalidArgument("--batch-size " + std::to_string(options.batch_size) +
                                    " is not a multiple of the " + std::to_string(ranks) +
                                    " ranks");
  }
  const int64_t local_batch = options.batch_size / ranks;

  // The same initial parameters everywhere (DDP broadcasts rank 0's anyway), then a per-rank
  // stream for dropout.
  torch::manual_seed(options.seed);
  ConvNet model;
  torch::optim::SGD optimizer(model->parameters(),
                              torch::optim::SGDOptions(options.lr).momentum(0.9));
  torch::manual_seed(options.seed * 1000003 + 1 + rank);

  gradwire::data::ShardedReaderOptions train_options;
  train_options.rank = rank;
  train_options.world_size = ranks;
  train_options.partition = options.partition;
  train_options.shuffle_chunks = true;
  train_options.seed = options.seed;
  if (options.partition == Partition::kDynamic) {
    train_options.counter =
        gradwire::data::connect_store_counter(world->info(), std::chrono::seconds(60));
    train_options.queue_name = "fashion_mnist/train";
  }
  BatchReader train(split_files(options.data_dir, "train"), train_options);
  gradwire::data::ShardedReaderOptions test_options;
  test_options.rank = rank;
  test_options.world_size = ranks;
  BatchReader test(split_files(options.data_dir, "test"), test_options);

  // Steps per epoch: the smallest rank share decides (static); the limit caps it.
  int64_t steps_per_epoch = 0;
  if (options.partition == Partition::kStatic) {
    const float share = static_cast<float>(train.reader().static_share_records());
    steps_per_epoch =
        static_cast<int64_t>(all_reduce(*comm, {share}, ReduceOp::kMin)[0].item<double>()) /
        local_batch;
  } else {
    uint64_t records = 0;
    for (const auto& file : train.reader().record_counts()) {
      for (uint64_t count : file) records += count;
    }
    steps_per_epoch = static_cast<int64_t>(records) / options.batch_size;
  }
  if (options.limit > 0) {
    steps_per_epoch = std::min(steps_per_epoch, options.limit / options.batch_size);
  }

  LrSchedule schedule;
  schedule.kind = options.lr_schedule;
  schedule.base_lr = options.lr;
  schedule.steps_per_epoch = std::max<int64_t>(1, steps_per_epoch);
  schedule.total_steps = schedule.steps_per_epoch * options.epochs;
  schedule.step_epochs = options.lr_step_epochs;
  schedule.gamma = options.lr_gamma;

  TrainingPosition position;
  if (options.resume) {
    if (std::optional<std::string> step_dir = newest_complete_checkpoint(options.checkpoint_dir)) {
      const CheckpointState state = load_rank_checkpoint(*step_dir, ranks, rank, *model, optimizer);
      position = state.position;
      if (rank == 0) {
        std::printf("resumed from %s: epoch %lld step %lld\n", step_dir->c_str(),
                    static_cast<long long>(position.epoch + 1),
                    static_cast<long long>(position.step_in_epoch));
      }
      // The saved schedule wins, as a PyTorch scheduler's load_state_dict does.
      if (state.schedule && *state.schedule != schedule) {
        if (rank == 0) {
          std::printf("continuing the checkpoint's schedule (%s) instead of the flags' (%s)\n",
                      describe(*state.schedule).c_str(), describe(schedule).c_str());
        }
        schedule = *state.schedule;
      }
    } else if (rank == 0) {
      std::printf("no complete checkpoint in %s: starting from scratch\n",
                  options.checkpoint_dir.c_str());
    }
  }
  // Wrapped after a resume's load: loading replaces the parameters' storage, which the wrapper
  // must see from the start.
  gradwire::ddp::DistributedDataParallel ddp(model, comm);
  auto save = [&] {
    if (options.checkpoint_dir.empty()) return;
    save_rank_checkpoint(options.checkpoint_dir, CheckpointState{position, schedule, ranks, rank},
                         *model, optimizer);
    comm->barrier()->wait();  // every rank's file is on disk
    if (rank == 0) {
      mark_checkpoint_complete(options.checkpoint_dir, position.global_step, ranks);
    }
  };

  if (rank == 0) {
    std::printf("%lld steps per epoch of %lld images, %s\n",
                static_cast<long long>(steps_per_epoch), static_cast<long long>(options.batch_size),
                describe(schedule).c_str());
    std::fflush(stdout);
  }
  const int64_t kill_step = test_kill_step(rank, ranks);
  ProgressReport progress(rank == 0, ::isatty(STDOUT_FILENO) == 1, options.batch_size);
  while (position.epoch < options.epochs) {
    if (position.step_in_epoch > 0) {
      train.reader().resume(position.reader);
    } else {
      train.reader().start_epoch(static_cast<uint64_t>(position.epoch));
    }
    progress.start_epoch(position.epoch + 1, steps_per_epoch, position.step_in_epoch);
    while (position.step_in_epoch < steps_per_epoch) {
      std::optional<Batch> batch = train.next_batch(local_batch);
      // The epoch ends for everyone as soon as one rank has no full batch.
      const float have = batch ? 1.0f : 0.0f;
      if (all_reduce(*comm, {have}, ReduceOp::kMin)[0].item<float>() == 0.0f) break;
      if (kill_step > 0 && position.global_step + 1 == kill_step) ::raise(SIGKILL);

      const double lr = learning_rate(schedule, position.global_step);
      for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
      optimizer.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(ddp(batch->images), batch->labels);
      loss.backward();  // gradients averaged over the ranks here
      optimizer.step();
      ++position.step_in_epoch;
      ++position.global_step;
      position.reader = train.reader().position();
      progress.step(position.step_in_epoch, loss.item<double>());
      if (options.checkpoint_every > 0 && position.global_step % options.checkpoint_every == 0 &&
          position.step_in_epoch < steps_per_epoch) {
        save();
      }
    }
    const double seconds = progress.finish_epoch();
    const double accuracy = evaluate(model, test, static_cast<uint64_t>(position.epoch), *comm);
    if (rank == 0) {
      std::printf("epoch %lld test accuracy %.2f%% (%.1f s)\n",
                  static_cast<long long>(position.epoch + 1), accuracy, seconds);
      std::fflush(stdout);
    }
    // The checkpoint of a finished epoch points at the start of the next one.
    position.step_in_epoch = 0;
    ++position.epoch;
    save();
  }
  std::printf("rank %d parameter checksum %.9g\n", rank, parameter_checksum(*model));
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace fashion_mnist

int main(int argc, char** argv) {
  try {
    const fashion_mnist::JobOptions options =
        fashion_mnist::parse_job_options(std::vector<std::string>(argv + 1, argv + argc));
    if (options.help) {
      std::cout << fashion_mnist::job_usage();
      return 0;
    }
    return fashion_mnist::run(options);
  } catch (const gradwire::InvalidArgument& e) {
    std::fprintf(stderr, "example-fashion-mnist: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example-fashion-mnist: %s\n", e.what());
    return 1;
  }
}
