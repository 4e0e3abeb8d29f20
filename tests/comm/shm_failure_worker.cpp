// A rank for the shm failure tests, started by shm_peer_failure_test with a torchrun-style
// environment and GRADWIRE_BACKEND=shm. Prints "SEGMENTS <n>" (entries of this job still in
// /dev/shm once init() returned), "READY", then allreduces 16 MiB over and over until a collective
// fails: "CAUGHT PeerLostError: <message>" exits 0, any other error exits 1.
#include <ATen/ATen.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "gradwire/comm/world.h"
#include "gradwire/common/error.h"

int main() {
  using namespace gradwire;
  try {
    auto world = init();
    auto comm = world->communicator();
    const std::string prefix = "gradwire-" + std::string(std::getenv("MASTER_PORT")) + "-";
    int segments = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
      if (entry.path().filename().string().rfind(prefix, 0) == 0) ++segments;
    }
    std::cout << "BACKEND " << comm->backend() << "\nSEGMENTS " << segments << "\nREADY"
              << std::endl;
    at::Tensor t = at::ones({1 << 22});
    while (true) comm->allreduce(t)->wait();
  } catch (const PeerLostError& e) {
    std::cout << "CAUGHT PeerLostError: " << e.what() << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cout << "CAUGHT other: " << e.what() << std::endl;
  }
  return 1;
}
