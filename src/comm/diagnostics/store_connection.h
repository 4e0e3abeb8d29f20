// Connecting to a c10d TCPStore so that no request to a stopped or hung store host can block for
// ever. libtorch 1.13 put the timeout on the connection's socket once wait() had run; 2.x waits
// with a timeout only inside wait() and get(), and every other request (set, add, compareSet,
// check) then blocks in recv() until the host answers. connect_tcp_store gives the connection's
// socket a receive and send timeout itself, the same on both versions.
#pragma once

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <string>

namespace gradwire {

// Connects a TCPStore (client, or server and client when options.isServer) to host:options.port,
// as c10d::TCPStore's constructor does, then sets SO_RCVTIMEO and SO_SNDTIMEO to options.timeout
// on the client connection it opened: a request whose reply does not come in time throws
// (c10::Error or c10::DistNetworkError from libtorch) instead of waiting. Blocks while connecting,
// up to options.timeout; throws what the constructor throws. Thread-safe; another thread opening
// sockets to the same port at the same moment may get the timeout too, which does no harm.
c10::intrusive_ptr<c10d::TCPStore> connect_tcp_store(const std::string& host,
                                                     const c10d::TCPStoreOptions& options);

}  // namespace gradwire
