#include "harness/memory.h"

#include <malloc.h>

#include <cstdlib>
#include <string>

#include "gradwire/common/settings.h"

namespace gradwire::bench {

namespace {

constexpr int kKeepBytes = 1 << 30;  // 1 GiB: above any single tensor the benchmarks allocate

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

bool system_malloc_requested() { return env_or_empty(settings::kBenchMalloc.name) == "system"; }

}  // namespace

void apply_memory_policy() {
  if (system_malloc_requested()) return;
  if (!env_or_empty("MALLOC_MMAP_THRESHOLD_").empty() ||
      !env_or_empty("MALLOC_TRIM_THRESHOLD_").empty()) {
    return;  // glibc read them at start-up; children inherit them
  }
  if (mallopt(M_MMAP_THRESHOLD, kKeepBytes) != 1 || mallopt(M_TRIM_THRESHOLD, kKeepBytes) != 1) {
    return;  // refused: stay with the defaults everywhere
  }
  const std::string bytes = std::to_string(kKeepBytes);
  ::setenv("MALLOC_MMAP_THRESHOLD_", bytes.c_str(), 1);
  ::setenv("MALLOC_TRIM_THRESHOLD_", bytes.c_str(), 1);
}

std::string describe_memory_policy() {
  if (system_malloc_requested()) return "glibc malloc defaults (GRADWIRE_BENCH_MALLOC=system)";
  const std::string mmap = env_or_empty("MALLOC_MMAP_THRESHOLD_");
  const std::string trim = env_or_empty("MALLOC_TRIM_THRESHOLD_");
  if (mmap.empty() && trim.empty()) return "glibc malloc defaults";
  return "glibc malloc keeps freed memory (MALLOC_MMAP_THRESHOLD_=" + (mmap.empty() ? "-" : mmap) +
         ", MALLOC_TRIM_THRESHOLD_=" + (trim.empty() ? "-" : trim) +
         ", in every process; GRADWIRE_BENCH_MALLOC=system for the defaults)";
}

}  // namespace gradwire::bench
