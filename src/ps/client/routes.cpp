// The routes of the client's calls (routes.h, Note [call routes]).
#include "routes.h"

#include <algorithm>

#include "gradwire/common/error.h"
#include "rpc/channel.h"

namespace gradwire::ps {

Routes::Routes(const ClientOptions& options, rpc::SharedRegions& regions)
    : addresses_(options.servers.value_or(std::vector<std::string>{})),
      shared_memory_(options.shared_memory.value_or(false)),
      host_identity_(options.host_identity.value_or("")),
      max_request_bytes_(options.max_request_bytes),
      max_message_bytes_(options.max_message_bytes),
      regions_(regions) {
  rpc::ChannelOptions channel;
  channel.tls_root_cert_file = options.tls_root_cert_file.value_or("");
  channel.max_message_bytes = options.max_message_bytes;
  channel.max_send_bytes = options.max_request_bytes;
  for (const std::string& address : addresses_) {
    stubs_.push_back(v1::ParameterServer::NewStub(rpc::make_channel(address, channel)));
  }
  shared_with_.assign(addresses_.size(), 0);
  channels_.resize(addresses_.size());
}

void Routes::offer(int server, v1::CreateTableRequest& request) {
  if (!shared_memory_) return;
  // Note [shared memory]: may this server read our regions?
  request.set_host(host_identity_);
  *request.mutable_probe() = regions_.probe();
  // Note [call channels]: and serve our calls from memory? Without memory for a channel, the
  // calls go over gRPC.
  std::lock_guard<std::mutex> lock(mutex_);
  auto& channel = channels_[static_cast<size_t>(server)];
  if (!channel) {
    try {
      channel = std::make_shared<ChannelTransport>(
          std::make_shared<rpc::ChannelClient>(regions_, addresses_[static_cast<size_t>(server)]));
    } catch (const BackendError&) {
      return;
    }
  }
  *request.mutable_channel() = channel->channel().reference();
}

void Routes::answered(int server, const v1::CreateTableResponse& response) {
  std::lock_guard<std::mutex> lock(mutex_);
  shared_with_[static_cast<size_t>(server)] = response.shared_memory() ? 1 : 0;
  const auto& channel = channels_[static_cast<size_t>(server)];
  if (response.channel() && channel) channel->channel().attached();
}

void Routes::start(int server, CallBase& call, const std::shared_ptr<GrpcTransport>& grpc) const {
  call.address = addresses_[static_cast<size_t>(server)];
  call.stub = stubs_[static_cast<size_t>(server)].get();
  call.started = CallBase::Clock::now();
  if (call.channel_method()) {
    // The channel takes the call unless it is larger than a slot or broke meanwhile.
    if (std::shared_ptr<ChannelTransport> channel = usable_channel(server)) {
      if (channel->start(call)) {
        call.transport = std::move(channel);
        return;
      }
    }
  }
  grpc->start(call);
  call.transport = grpc;
}

BatchLimits Routes::batch_limits(int server) const {
  BatchLimits limits{max_request_bytes_ - kBatchFraming, max_message_bytes_ - kBatchFraming};
  if (usable_channel(server)) {
    // A batch that fits a slot goes over memory; a larger one would go over gRPC.
    limits.request_bytes = std::min(limits.request_bytes, rpc::kChannelSlotBytes - kBatchFraming);
    limits.answer_bytes = std::min(limits.answer_bytes, rpc::kChannelSlotBytes - kBatchFraming);
  }
  return limits;
}

bool Routes::shares_memory_with(int server) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return server >= 0 && server < size() && shared_with_[static_cast<size_t>(server)];
}

std::string Routes::transport_name(int server) const {
  return usable_channel(server) ? "shared memory" : "grpc";
}

std::optional<v1::SharedBytes> Routes::push_reference(const at::Tensor& grads) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!std::all_of(shared_with_.begin(), shared_with_.end(), [](char on) { return on != 0; })) {
      return std::nullopt;
    }
  }
  return regions_.find(grads);
}

std::optional<v1::SharedBytes> Routes::lookup_into(int server, const at::Tensor& out) const {
  if (!shares_memory_with(server)) return std::nullopt;
  return regions_.find(out);
}

// The channel to `server` when the server serves it (attached, not broken by a timeout or the
// server's exit), else nullptr.
std::shared_ptr<ChannelTransport> Routes::usable_channel(int server) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (server < 0 || server >= size()) return nullptr;
  const auto& channel = channels_[static_cast<size_t>(server)];
  return channel && channel->channel().usable() ? channel : nullptr;
}

}  // namespace gradwire::ps
