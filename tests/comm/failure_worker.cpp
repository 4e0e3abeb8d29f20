// A rank program for peer-failure tests, started under the launcher:
//   failure_worker die   : the last rank exits after one allreduce; the others try a second one.
//   failure_worker stall : the last rank stops calling collectives (sleeps); the others wait.
// Survivors print "CAUGHT <ErrorType> after <ms> ms: <message>" and exit 0 when they got the
// promised error type, 1 otherwise.
#include <ATen/ATen.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>

#include "gradwire/comm/world.h"
#include "gradwire/common/error.h"

int main(int argc, char** argv) {
  using namespace gradwire;
  const std::string mode = argc > 1 ? argv[1] : "";
  auto world = init();
  auto comm = world->communicator();
  const int victim = comm->size() - 1;
  at::Tensor t = at::ones({1 << 16});
  comm->allreduce(t)->wait();
  if (comm->rank() == victim) {
    if (mode == "die") _exit(0);  // vanish without closing anything politely
    std::this_thread::sleep_for(comm->timeout() * 3);
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start)
        .count();
  };
  try {
    // Several operations: the first may still complete on some ranks when the victim leaves.
    for (int i = 0; i < 5; ++i) comm->allreduce(t)->wait();
    std::cout << "NO ERROR" << std::endl;
  } catch (const PeerLostError& e) {
    std::cout << "CAUGHT PeerLostError after " << elapsed() << " ms: " << e.what() << std::endl;
    return mode == "die" ? 0 : 1;
  } catch (const TimeoutError& e) {
    std::cout << "CAUGHT TimeoutError after " << elapsed() << " ms: " << e.what() << std::endl;
    return mode == "stall" ? 0 : 1;
  } catch (const std::exception& e) {
    std::cout << "CAUGHT other after " << elapsed() << " ms: " << e.what() << std::endl;
  }
  return 1;
}
