#include "rpc/channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/support/channel_arguments.h>

#include <future>
#include <limits>
#include <mutex>

#include "gradwire/common/error.h"
#include "rpc/auth.h"
#include "rpc/proto/ps.grpc.pb.h"
#include "rpc/tls.h"

namespace gradwire::rpc {
namespace {

int clamp_to_int(int64_t value) {
  return value > std::numeric_limits<int>::max() ? std::numeric_limits<int>::max()
                                                 : static_cast<int>(value);
}

// Note [callback queue]: gRPC serves the callback API (the client's async() calls) from one
// process-wide completion queue, created on a channel's first callback call and torn down, with
// its polling thread, when the last such channel is destroyed. A process that destroys its last
// client and creates another (a benchmark repeat, a test per case) can race that teardown and
// abort inside gRPC ("assertion failed: prior > 0" on the queue). One channel that made a
// callback call, never destroyed, keeps the queue for the life of the process.
void keep_callback_queue_alive() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Never deleted (see above); no connection is made: the call's deadline has passed.
    auto* keeper = new std::shared_ptr<grpc::Channel>(
        grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()));
    auto stub = ps::v1::ParameterServer::NewStub(*keeper);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now());
    ps::v1::CheckpointRequest request;
    ps::v1::CheckpointResponse response;
    std::promise<void> done;
    stub->async()->Checkpoint(&context, &request, &response,
                              [&done](const grpc::Status&) { done.set_value(); });
    done.get_future().wait();
  });
}

}  // namespace

std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            const ChannelOptions& options) {
  if (address.empty()) {
    throw ConfigError("gradwire: empty parameter-server address; expected HOST:PORT");
  }
  keep_callback_queue_alive();
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
