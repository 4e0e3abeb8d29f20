#include "rpc/channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/support/channel_arguments.h>

#include <limits>

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

std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            const ChannelOptions& options) {
  if (address.empty()) {
    throw ConfigError("gradwire: empty parameter-server address; expected HOST:PORT");
  }
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(clamp_to_int(options.max_message_bytes));
  arguments.SetMaxSendMessageSize(clamp_to_int(options.max_message_bytes));
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, clamp_to_int(options.keepalive_time.count()));
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, clamp_to_int(options.keepalive_timeout.count()));
  arguments.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
                   clamp_to_int(options.max_reconnect_backoff.count()));
  arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
                   clamp_to_int(std::min<int64_t>(100, options.max_reconnect_backoff.count())));
  arguments.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
                   clamp_to_int(std::min<int64_t>(100, options.max_reconnect_backoff.count())));
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
