// Test support for worker programs: a start line that the ranks of one job cross together, before
// their rendezvous. Header only: the workers link the library alone.
//
// Note [start line]: a test that gives its job a short GRADWIRE_TIMEOUT, to see a collective time
// out quickly, bounds the rendezvous by it too (InitOptions::timeout). On a loaded machine the
// ranks' processes can start seconds apart (each loads libtorch first), and the first rank then
// timed out in the rendezvous before the last one had started (Backends/Desync with 2 s). A worker
// calls wait_at_start_line() first thing in main(): it marks its rank as started and waits until
// every rank of the job has, so that the timeout bounds the rendezvous itself, not how far apart
// the processes started. WorkerJob and launch_job (worker_processes.h) name the directory of the
// marks in kStartLineVariable; without it the call returns at once.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>

namespace gradwire::testing {

inline constexpr const char* kStartLineVariable = "GRADWIRE_TEST_START_LINE";

// Blocks until every rank of the job (RANK of WORLD_SIZE, from the environment) has called it, or
// for at most `limit` (then init() reports whoever is missing, as without the line).
inline void wait_at_start_line(std::chrono::milliseconds limit = std::chrono::seconds(120)) {
  namespace fs = std::filesystem;
  const char* dir = std::getenv(kStartLineVariable);
  const char* rank = std::getenv("RANK");
  const char* world_size = std::getenv("WORLD_SIZE");
  if (dir == nullptr || rank == nullptr || world_size == nullptr) return;
  const fs::path marks(dir);
  const std::string mine = (marks / ("rank_" + std::string(rank))).string();
  std::ofstream(mine + ".tmp").close();
  std::error_code error;
  fs::rename(mine + ".tmp", mine, error);  // whole, so a mark read is a mark written
  if (error) return;                       // no line to wait at: init() alone decides
  const int size = std::atoi(world_size);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  auto everyone_started = [&] {
    for (int r = 0; r < size; ++r) {
      if (!fs::exists(marks / ("rank_" + std::to_string(r)))) return false;
    }
    return true;
  };
  while (!everyone_started() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace gradwire::testing
