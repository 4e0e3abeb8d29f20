// The service's call channels (service.h; Note [call channels] in ps/client/routes.h describes
// them): opening a trainer's channel at CreateTable, running the Batch calls that come over it
// through the same handler as over gRPC, and stopping the channels' threads.
#include <memory>

#include "gradwire/common/error.h"
#include "ps/messages/call_summary.h"
#include "ps/server/service.h"

namespace gradwire::ps {
namespace {

// Parses a channel call's request as Request, runs `body(request, &response)` and hands the
// response over as the answer.
template <typename Request, typename Response, typename Body>
grpc::Status run_parsed(const rpc::ChannelCall& call,
                        std::unique_ptr<google::protobuf::Message>* answer, Body&& body) {
  Request request;
  if (!request.ParseFromString(call.request)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "a request over shared memory does not parse as " + request.GetTypeName());
  }
  auto response = std::make_unique<Response>();
  grpc::Status status = body(request, response.get());
  if (status.ok()) *answer = std::move(response);
  return status;
}

}  // namespace

// Served by the process's rpc::ChannelHub until the trainer closes the channel or exits, or the
// server stops; only a probed CreateTable gets here (Note [call channels] in ps/client/routes.h).
bool ParameterServerService::open_channel(const v1::SharedBytes& ref) {
  std::lock_guard<std::mutex> lock(channels_mutex_);
  if (channels_stopped_) return false;
  if (channels_.count(ref.key()) != 0) return !channels_.at(ref.key())->ended();
  for (auto it = channels_.begin(); it != channels_.end();) {
    it = it->second->ended() ? channels_.erase(it) : std::next(it);
  }
  if (channels_.size() >= kMaxChannels) return false;
  try {
    channels_[ref.key()] =
        hub_.attach(shared_, ref, [this](const rpc::ChannelCall& call, auto* answer) {
          return serve_channel_call(call, answer);
        });
  } catch (const InvalidArgument&) {
    return false;  // not a channel this server can map: the trainer calls over gRPC
  }
  return true;
}

grpc::Status ParameterServerService::serve_channel_batch(
    const rpc::ChannelCall& call, std::unique_ptr<google::protobuf::Message>* answer,
    ServedSpan& span) {
  const CallInfo info{call.deadline, [this, &call] { return stopping_.load() || call.cancelled(); },
                      call.will_wait, rpc::kChannelSlotBytes, /*shares_memory=*/true};
  if (call.method != rpc::ChannelMethod::kBatch) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "unknown method over shared memory");
  }
  return run_parsed<v1::BatchRequest, v1::BatchResponse>(
      call, answer, [&](const auto& request, auto* response) {
        if (timeline::enabled()) {
          span.begin(ServedSpan::kChannelThreadName, CallMethod::kBatch, CallTransport::kChannel,
                     summarize(request), call.request.size());
        }
        return batch(info, request, response);
      });
}

void ParameterServerService::stop_channels() {
  std::map<uint64_t, std::unique_ptr<rpc::ChannelServer>> channels;
  {
    std::lock_guard<std::mutex> lock(channels_mutex_);
    channels_stopped_ = true;
    channels.swap(channels_);
  }
  for (auto& [key, channel] : channels) channel->stop();
  channels.clear();  // waits for their running calls
}

int ParameterServerService::channels() const {
  std::lock_guard<std::mutex> lock(channels_mutex_);
  int live = 0;
  for (const auto& entry : channels_) live += entry.second->ended() ? 0 : 1;
  return live;
}

}  // namespace gradwire::ps
