// Client channels to a parameter server and the per-call context (deadline + token).
//
// Thread safety: a grpc::Channel is thread safe and meant to be shared by every call to one
// server; a ClientContext belongs to one call. Blocking: none (channels connect lazily).
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace gradwire::rpc {

struct ChannelOptions {
  // PEM file of root certificates to trust; empty: plaintext.
  std::string tls_root_cert_file;
  // Largest message received, and sent unless max_send_bytes is set, in bytes.
  int64_t max_message_bytes = int64_t{64} << 20;
  // Largest message sent, in bytes (the server must read at least as much); 0: max_message_bytes.
  int64_t max_send_bytes = 0;
  // HTTP/2 keepalive pings on idle connections, so a dead server is noticed by open calls.
  std::chrono::milliseconds keepalive_time{30000};
  std::chrono::milliseconds keepalive_timeout{10000};
  // Longest wait between reconnection attempts to a server that is down.
  std::chrono::milliseconds max_reconnect_backoff{1000};
};

// A channel to "HOST:PORT". ConfigError when the address is empty or the TLS file unreadable.
std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            const ChannelOptions& options = {});

// Turns off Abseil's mutex deadlock detector for this process (once; later calls do nothing).
// Debian's Abseil is built without NDEBUG, so the detector is on by default and every gRPC mutex
// operation walks a lock graph: about 2% of a parameter-server job's CPU (perf, gradwire-bench
// hybrid 8x8). Release builds of Abseil have it off. make_channel() and the server call it.
void disable_abseil_deadlock_detection();

// Prepares a fresh context for one call: deadline and token metadata.
void prepare_context(grpc::ClientContext& context, const std::string& token,
                     std::chrono::system_clock::time_point deadline);
// A new context whose deadline is `timeout` from now.
std::unique_ptr<grpc::ClientContext> make_context(const std::string& token,
                                                  std::chrono::milliseconds timeout);

}  // namespace gradwire::rpc
