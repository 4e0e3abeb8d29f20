// The memory policy of every process a benchmark starts: glibc malloc keeps freed memory for
// reuse instead of handing it back to the kernel.
//
// Note [freed memory]: by default glibc serves allocations above a (dynamic) threshold with
// mmap and returns freed heap tops to the kernel, so a training loop that frees and re-allocates
// its activations every iteration page-faults them back in every iteration. On a virtual machine
// a page fault is dear: resnet18 (batch 8, 64x64, one thread) ran at 0.29 s/iter in a fresh
// process against 0.09 s/iter once glibc's thresholds had grown, so whichever configuration ran
// first in a process looked three times slower. PyTorch's performance guide recommends jemalloc
// or tcmalloc for the same reason. gradwire-bench instead raises M_MMAP_THRESHOLD and
// M_TRIM_THRESHOLD, in itself with mallopt and, through MALLOC_MMAP_THRESHOLD_ /
// MALLOC_TRIM_THRESHOLD_ in the environment, in every rank, server and PyTorch reference it
// starts, so both sides of a comparison run under the same policy.
#pragma once

#include <string>

namespace gradwire::bench {

// Applies the policy unless GRADWIRE_BENCH_MALLOC=system, or unless MALLOC_MMAP_THRESHOLD_ or
// MALLOC_TRIM_THRESHOLD_ is already set (the user's choice wins, and is passed on unchanged).
// Call first thing in main(), before any thread starts (it writes the environment). Never throws.
void apply_memory_policy();

// The policy in force, read from the environment, for report headers: e.g. "glibc malloc keeps
// freed memory (MALLOC_MMAP_THRESHOLD_=1073741824, MALLOC_TRIM_THRESHOLD_=1073741824)".
std::string describe_memory_policy();

}  // namespace gradwire::bench
