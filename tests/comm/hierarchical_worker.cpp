// A rank program for the two-launcher test (hierarchical_launch_test.cpp):
//   hierarchical_worker store : builds its world with the backend chosen with the store at hand
//                               (connect_world() over the process environment)
//   hierarchical_worker init  : builds it with gradwire::init()
// Prints "BACKEND <name>", runs allreduces (several dtypes, sizes, ops) and the delegated
// operations against locally computed results, then "WORKER OK" and exits 0; exits 1 on a
// mismatch or an error.
#include <ATen/ATen.h>

#include <iostream>

#include "comm/connect_world.h"
#include "gradwire/comm/world.h"

namespace {

using gradwire::ReduceOp;

at::Tensor input_for(int rank, int64_t n, at::ScalarType dtype) {
  return at::arange(n, at::kLong).mul(rank + 3).remainder(17).sub(8).to(dtype);
}

bool check(bool ok, const std::string& what) {
  if (!ok) std::cout << "MISMATCH " << what << std::endl;
  return ok;
}

bool run_checks(gradwire::Communicator& comm) {
  const int size = comm.size(), rank = comm.rank();
  bool ok = true;
  for (auto dtype : {at::kFloat, at::kBFloat16, at::kLong}) {
    // Larger than a 1 MiB shm slot (chunked) for float only: the others take the same paths.
    for (int64_t n : {int64_t{1}, int64_t{5000}, dtype == at::kFloat ? int64_t{300000} : 0}) {
      if (n == 0) continue;
      std::vector<at::Tensor> inputs;
      for (int r = 0; r < size; ++r) inputs.push_back(input_for(r, n, at::kDouble));
      auto stacked = at::stack(inputs);
      for (auto op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax}) {
        if (op == ReduceOp::kAvg && dtype == at::kLong) continue;
        at::Tensor t = input_for(rank, n, dtype);
        comm.allreduce(t, op)->wait();
        at::Tensor want = op == ReduceOp::kSum   ? stacked.sum(0)
                          : op == ReduceOp::kMin ? std::get<0>(stacked.min(0))
                          : op == ReduceOp::kMax ? std::get<0>(stacked.max(0))
                                                 : stacked.mean(0);
        ok &= check(at::equal(t, want.to(dtype)), std::string("allreduce ") + c10::toString(dtype) +
                                                      " n=" + std::to_string(n) + " " +
                                                      to_string(op));
      }
    }
  }
  at::Tensor b = input_for(rank, 777, at::kFloat);
  comm.broadcast(b, size - 1)->wait();
  ok &= check(at::equal(b, input_for(size - 1, 777, at::kFloat)), "broadcast");
  at::Tensor gathered = at::empty({size * 10}, at::kInt);
  comm.allgather(input_for(rank, 10, at::kInt), gathered)->wait();
  for (int r = 0; r < size; ++r) {
    ok &= check(at::equal(gathered.narrow(0, r * 10, 10), input_for(r, 10, at::kInt)), "allgather");
  }
  at::Tensor in = at::empty({100}, at::kFloat);
  auto sent = comm.send(input_for(rank, 100, at::kFloat), (rank + 1) % size, 3);
  comm.recv(in, (rank + size - 1) % size, 3)->wait();
  sent->wait();
  ok &= check(at::equal(in, input_for((rank + size - 1) % size, 100, at::kFloat)), "send/recv");
  comm.barrier()->wait();
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    auto world = mode == "init" ? gradwire::init()
                                : gradwire::connect_world({}, gradwire::EnvMap::from_process());
    auto comm = world->communicator();
    std::cout << "BACKEND " << comm->backend() << std::endl;
    if (!run_checks(*comm)) return 1;
    std::cout << "WORKER OK" << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cout << "ERROR " << e.what() << std::endl;
    return 1;
  }
}
