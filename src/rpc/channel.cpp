#include "rpc/channel.h"

#include <absl/synchronization/mutex.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/support/channel_arguments.h>

#include <limits>
#include <mutex>

#include "gradwire/common/error.h"
#include "rpc/auth.h"
#include "rpc/tls.h"

namespace gradwire::rpc {
namespace {

int clamp_to_int(int64_t value) {
  return value > std::numeric_limits<int>::max() ? std::numeric_limits<int>::max()
                                                 : static_cast<int>(value);
}

}  // namespace

void disable_abseil_deadlock_detection() {
  static std::once_flag once;
  std::call_once(once, [] { absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore); });
}

std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            const ChannelOptions& options) {
  disable_abseil_deadlock_detection();
  if (address.empty()) {
    throw ConfigError("gradwire: empty parameter-server address; expected HOST:PORT");
  }
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(clamp_to_int(options.max_message_bytes));
  arguments.SetMaxSendMessageSize(clamp_to_int(
      options.max_send_bytes > 0 ? options.max_send_bytes : options.max_message_bytes));
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, clamp_to_int(options.keepalive_time.count()));
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, clamp_to_int(options.keepalive_timeout.count()));
  arguments.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
                   clamp_to_int(options.max_reconnect_backoff.count()));
  arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
                   clamp_to_int(std::min<int64_t>(100, options.max_reconnect_backoff.count())));
  // GRPC_ARG_MIN_RECONNECT_BACKOFF_MS is left alone: gRPC uses it as the shortest time a TCP
  // connect + HTTP/2 handshake may take (default 20 s). Set to 100 ms it made every attempt fail
  // ("tcp handshaker shutdown") on a machine busy enough that a handshake took longer. The call's
  // deadline still bounds how long a call waits for an unreachable server.
  return grpc::CreateCustomChannel(address, make_channel_credentials(options.tls_root_cert_file),
                                   arguments);
}

void prepare_context(grpc::ClientContext& context, const std::string& token,
                     std::chrono::system_clock::time_point deadline) {
  context.set_deadline(deadline);
  add_token(context, token);
}

std::unique_ptr<grpc::ClientContext> make_context(const std::string& token,
                                                  std::chrono::milliseconds timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  prepare_context(*context, token, std::chrono::system_clock::now() + timeout);
  return context;
}

}  // namespace gradwire::rpc
