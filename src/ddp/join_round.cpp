#include "join_round.h"

#include <ATen/ATen.h>

#include <string>

#include "gradwire/common/error.h"

namespace gradwire::ddp {

int JoinRound::root() const {
  GRADWIRE_CHECK(!training.empty());
  return training.front();
}

at::Tensor join_contribution(int rank, int world_size, bool training, bool synchronising) {
  GRADWIRE_CHECK(rank >= 0 && rank < world_size);
  at::Tensor contribution = at::zeros({world_size + 1}, at::kInt);
  int32_t* data = contribution.data_ptr<int32_t>();
  if (training) {
    data[rank] = 1;
    data[world_size] = synchronising ? 1 : 0;
  }
  return contribution;
}

JoinRound read_join_round(const at::Tensor& sum) {
  GRADWIRE_CHECK_EQ(sum.scalar_type(), at::kInt);
  GRADWIRE_CHECK_GE(sum.numel(), 2);
  const at::Tensor values = sum.contiguous();
  const int32_t* data = values.data_ptr<int32_t>();
  const int world_size = static_cast<int>(values.numel()) - 1;
  JoinRound round;
  for (int r = 0; r < world_size; ++r) {
    GRADWIRE_CHECK(data[r] == 0 || data[r] == 1);  // each rank sets only its own entry
    if (data[r] == 1) round.training.push_back(r);
  }
  const int synchronising = data[world_size];
  const int training = static_cast<int>(round.training.size());
  GRADWIRE_CHECK(synchronising >= 0 && synchronising <= training);
  if (synchronising != 0 && synchronising != training) {
    throw InvalidArgument(
        "DistributedDataParallel Join: in this iteration " + std::to_string(synchronising) +
        " of the " + std::to_string(training) +
        " ranks still training synchronise gradients and the others run under no_sync(); every "
        "rank must call no_sync() around the same forwards");
  }
  round.synchronising = synchronising > 0;
  return round;
}

JoinRound exchange_join_round(Communicator& comm, bool training, bool synchronising) {
  at::Tensor contribution = join_contribution(comm.rank(), comm.size(), training, synchronising);
  if (comm.size() > 1) {
    at::Tensor on_device = contribution.to(comm.device());
    comm.allreduce(on_device, ReduceOp::kSum)->wait();
    contribution = on_device.cpu();
  }
  return read_join_round(contribution);
}

}  // namespace gradwire::ddp
