// A rank program for the desync tests (desync_test.cpp starts it with a torchrun-style
// environment, GRADWIRE_BACKEND and a short GRADWIRE_TIMEOUT). Every rank first runs #1
// allreduce(sum) and #2 broadcast(root 0) of 1000 floats, then:
//   desync_worker stop        : the last rank computes (sleeps) 200 ms, prints "READY" and sleeps
//                               on (the test stops it with SIGSTOP); the others start #3, an
//                               allreduce, and time out.
//   desync_worker stop-host   : the same with rank 0, the store's host, as the stopped rank.
//   desync_worker stop-inside : the last rank issues #3, an allreduce, and stops itself (SIGSTOP)
//                               100 ms later; the others issue #3 and #4 after 500 ms.
//   desync_worker broadcast   : rank 0 calls allreduce(sum) of 1024 floats as #3, the others
//   desync_worker allgather     broadcast(root 0) / allgather of 1024 floats.
// A rank that gets a gradwire error prints "CAUGHT <ErrorType> after <ms> ms: <message>" and
// exits 0 when the test releases it with SIGUSR1 (at most a minute later), which the test does
// once every rank that times out has printed its report: a rank that left at once would close its
// connections while a peer may still be in its own timeout path, and turn the peer's desync report
// into "peer lost". No error: "NO ERROR", exit 1.
#include <ATen/ATen.h>
#include <pthread.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include "gradwire/comm/world.h"
#include "gradwire/common/error.h"

namespace {

const char* type_of(const gradwire::Error& e) {
  if (dynamic_cast<const gradwire::TimeoutError*>(&e)) return "TimeoutError";
  if (dynamic_cast<const gradwire::PeerLostError*>(&e)) return "PeerLostError";
  if (dynamic_cast<const gradwire::BackendError*>(&e)) return "BackendError";
  return "Error";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gradwire;
  const std::string mode = argc > 1 ? argv[1] : "";
  // SIGUSR1 (the test's release) stays pending until sigtimedwait below takes it: blocked before
  // init() starts any thread, so that every thread inherits the mask.
  sigset_t release;
  sigemptyset(&release);
  sigaddset(&release, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &release, nullptr);
  auto world = init();
  auto comm = world->communicator();
  at::Tensor t = at::ones({1000});
  comm->allreduce(t)->wait();
  comm->broadcast(t, 0)->wait();
  const bool stop_mode = mode == "stop" || mode == "stop-host";
  const int stopped = mode == "stop-host" ? 0 : comm->size() - 1;
  if (stop_mode && comm->rank() == stopped) {
    // "Compute" before the next collective, during which the test stops us: the record of #2
    // reaches the store within milliseconds (diagnostics/progress_board.h), even on a loaded
    // machine.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::cout << "READY" << std::endl;
    std::this_thread::sleep_for(std::chrono::minutes(2));  // the test stops, then kills us
    return 1;
  }
  if (mode == "stop-inside") {
    if (comm->rank() == comm->size() - 1) {
      at::Tensor x = at::ones({1024});
      auto work = comm->allreduce(x);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::cout << "STOPPING" << std::endl;
      raise(SIGSTOP);  // the test kills us
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    at::Tensor x = at::ones({1024});
    if (mode == "stop-inside") {
      comm->allreduce(x)->wait();
      comm->allreduce(x)->wait();
    } else if (stop_mode || comm->rank() == 0) {
      comm->allreduce(x)->wait();
    } else if (mode == "broadcast") {
      comm->broadcast(x, 0)->wait();
    } else if (mode == "allgather") {
      at::Tensor out = at::empty({1024 * comm->size()});
      comm->allgather(x, out)->wait();
    }
    std::cout << "NO ERROR" << std::endl;
  } catch (const Error& e) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    std::cout << "CAUGHT " << type_of(e) << " after " << ms << " ms: " << e.what() << std::endl;
    // Stay until the test says every report is written (see the top of this file).
    const timespec limit{60, 0};
    sigtimedwait(&release, nullptr, &limit);
    return 0;
  }
  return 1;
}
