// The smallest gradwire program: every rank contributes its rank number; all print the sum.
//   gradwire-run --nproc-per-node 2 build/bin/example-allreduce
#include <ATen/ATen.h>
#include <gradwire/gradwire.h>

#include <iostream>

int main() try {
  auto world = gradwire::init();  // reads RANK, WORLD_SIZE, MASTER_ADDR ... from the launcher
  auto comm = world->communicator();
  at::Tensor t = at::full({4}, static_cast<float>(comm->rank()));
  comm->allreduce(t, gradwire::ReduceOp::kSum)->wait();
  std::cout << "rank " << comm->rank() << " of " << comm->size()
            << ": sum of ranks = " << t[0].item<float>() << std::endl;
  return 0;
} catch (const gradwire::Error& e) {
  std::cerr << e.what() << std::endl;
  return 1;
}
