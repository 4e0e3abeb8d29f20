// How the ranks of one shm communicator come to share a segment, through the rendezvous store:
// rank 0 creates it (segment_name(): the job's port, its pid, a random nonce) and publishes the
// name; every other rank attaches; each writes its pid into its control block; the last rank to
// attach unlinks the name, so from then on nothing is left in /dev/shm even if the job is
// SIGKILLed. Blocks until the name is unlinked (every rank attached) or `timeout` passed.
#pragma once

#include <chrono>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "comm/shm/segment.h"

namespace gradwire::shm {

// `store` is already prefixed for this communicator. Throws std::runtime_error ("... timed out
// ..." when a rank did not attach in time); on failure rank 0 unlinks the segment it created.
Segment join_segment(c10d::Store& store, int rank, const Layout& layout, int port,
                        std::chrono::milliseconds timeout);

}  // namespace gradwire::shm
