// start_server and the Server handle: binding, TLS, limits, handler threads, restoring
// checkpoints at start and writing them at shutdown (docs/ps.md "Server", "Threads and locks").
#include "gradwire/ps/server.h"

#include <ATen/Parallel.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>

#include "gradwire/common/error.h"
#include "gradwire/common/host_identity.h"
#include "gradwire/common/timeline.h"
#include "ps/server/metrics_publisher.h"
#include "ps/server/server_checkpoints.h"
#include "ps/server/server_listen.h"
#include "ps/server/server_metrics.h"
#include "ps/server/service.h"
#include "ps/server/table_registry.h"
#include "rpc/auth.h"
#include "rpc/call_channel.h"
#include "rpc/channel.h"
#include "rpc/tls.h"

namespace gradwire::ps {
namespace {

// HTTP/2 streams (calls) one connection may have open at once.
constexpr int kMaxStreamsPerConnection = 256;

int clamp_to_int(int64_t value) {
  return static_cast<int>(std::min<int64_t>(value, std::numeric_limits<int>::max()));
}

void check_options(const ServerOptions& options) {
  if (options.token.value_or("").empty()) {
    throw ConfigError(
        "gradwire: the parameter server needs the job's token (ServerOptions::token); pass "
        "--token-file or set GRADWIRE_TOKEN so that only the job's trainers can call it");
  }
  if (options.threads < 1) {
    throw ConfigError("gradwire: the parameter server needs at least 1 handler thread, got " +
                      std::to_string(options.threads) + " (--threads)");
  }
  if (options.max_request_bytes < 1024) {
    throw ConfigError("gradwire: max_request_bytes " + std::to_string(options.max_request_bytes) +
                      " is too small for any call; use at least 1024 (--max-request-bytes)");
  }
  if (options.max_message_bytes < 1024) {
    throw ConfigError("gradwire: max_message_bytes " + std::to_string(options.max_message_bytes) +
                      " is too small for any call; use at least 1024 (--max-message-bytes)");
  }
  if (options.checkpoint_every_steps < 0) {
    throw ConfigError("gradwire: checkpoint_every_steps must be >= 0, got " +
                      std::to_string(options.checkpoint_every_steps));
  }
  const std::pair<const char*, int64_t> limits[] = {
      {"max_trainers (--max-trainers)", options.max_trainers},
      {"max_tables (--max-tables)", options.max_tables},
      {"max_total_table_bytes (--max-total-table-bytes)", options.max_total_table_bytes},
      {"max_pending_bytes (--max-pending-bytes)", options.max_pending_bytes},
      {"max_total_pending_bytes (--max-total-pending-bytes)", options.max_total_pending_bytes},
      {"max_waiting_steps (--max-waiting-steps)", options.max_waiting_steps},
      {"max_shared_region_bytes (--max-shared-region-bytes)", options.max_shared_region_bytes},
      {"max_shared_bytes (--max-shared-bytes)", options.max_shared_bytes},
      {"max_shared_process_bytes (--max-shared-process-bytes)", options.max_shared_process_bytes},
  };
  for (const auto& [name, value] : limits) {
    if (value < 1) {
      throw ConfigError(std::string("gradwire: the parameter server's ") + name +
                        " must be >= 1, got " + std::to_string(value));
    }
  }
  if (options.max_grpc_memory_bytes != 0 &&
      options.max_grpc_memory_bytes < options.max_message_bytes) {
    throw ConfigError("gradwire: max_grpc_memory_bytes " +
                      std::to_string(options.max_grpc_memory_bytes) +
                      " cannot hold one message of max_message_bytes " +
                      std::to_string(options.max_message_bytes) +
                      "; use 0 (64 x max_message_bytes) or at least max_message_bytes "
                      "(--max-grpc-memory-bytes)");
  }
}

// "emb step 12, dense step 12": what a server restored from its checkpoints, for the timeline.
std::string describe_restored(const std::vector<ShardSnapshot>& restored) {
  std::string what;
  for (const ShardSnapshot& snapshot : restored) {
    what += (what.empty() ? "" : ", ") + snapshot.config.name + " step " +
            std::to_string(snapshot.step);
  }
  return what;
}

// Idle handler threads a server keeps (Note [idle pollers]).
constexpr int kIdlePollers = 16;

// What the server maps of trainers' shared memory (the cache's own bound on regions kept).
rpc::SharedRegionLimits shared_region_limits(const ServerOptions& options) {
  rpc::SharedRegionLimits limits;
  limits.max_region_bytes = options.max_shared_region_bytes;
  limits.max_mapped_bytes = options.max_shared_bytes;
  limits.max_process_bytes = options.max_shared_process_bytes;
  return limits;
}

// The derived default of max_grpc_memory_bytes: room for this many largest messages, at least
// kMinGrpcMemoryBytes (connections need buffers even when messages are small).
constexpr int64_t kGrpcMemoryMessages = 64;
constexpr int64_t kMinGrpcMemoryBytes = int64_t{256} << 20;

class ServerImpl final : public Server {
 public:
  // `publisher` (may be null) serves this server's metrics once it listens.
  ServerImpl(const ServerOptions& options, std::shared_ptr<rpc::ChannelHub> hub,
             std::shared_ptr<MetricsPublisher> publisher)
      : options_(options),
        hub_(std::move(hub)),
        publisher_(std::move(publisher)),
        listen_(parse_listen_address(options.listen)),
        tables_(RegistryLimits{options.max_tables, options.max_total_table_bytes,
                               options.max_pending_bytes, options.max_total_pending_bytes}),
        checkpoints_(options.checkpoint_dir, options.checkpoint_every_steps,
                     options.checkpoint_keep,
                     [this](const std::string& table, std::chrono::steady_clock::duration took,
                            bool ok) { metrics_.checkpoint(table, took, ok); }) {
    // Restored tables keep the limits CreateTable checks (a file above them stops the start).
    std::vector<ShardSnapshot> restored =
        checkpoints_.read_all([&options](const ShardSnapshot& snapshot) {
          check_table_limits(snapshot.config, snapshot.server_index, snapshot.num_servers,
                             TableLimits{options.max_trainers, options.max_table_bytes});
        });
    const auto restored_tables = static_cast<int64_t>(restored.size());
    const std::string restored_what = timeline::enabled() ? describe_restored(restored) : "";
    tables_.add_restored(std::move(restored));
    at::set_num_threads(options.threads);
    // Without a timeline_name, the server is named after its address, once the port is known.
    std::string name =
        options.timeline_name.empty() ? "ps server " + options.listen : options.timeline_name;
    service_ = std::make_unique<ParameterServerService>(
        *options.token,
        ServiceLimits{options.max_message_bytes, options.max_table_bytes, options.max_trainers,
                      options.max_waiting_steps, shared_region_limits(options)},
        options.shared_memory ? options.host_identity.value_or("") : std::string(), tables_,
        checkpoints_, *hub_, metrics_, name + " calls");
    metrics_.set_gauges(gauges(restored_tables));

    rpc::disable_abseil_deadlock_detection();
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort(
        options.listen, rpc::make_server_credentials(options.tls_cert_file, options.tls_key_file),
        &port);
    builder.RegisterService(service_.get());
    // Note [request limit]: gRPC's sync server reads and parses a request before any handler
    // checks its token, so the receive limit is what a caller without the token can make the
    // server read per call: gRPC's default, 4 MiB. Clients cut larger lookups and pushes into
    // several calls (ClientOptions::max_request_bytes); answers may be larger.
    builder.SetMaxReceiveMessageSize(clamp_to_int(options.max_request_bytes));
    builder.SetMaxSendMessageSize(clamp_to_int(options.max_message_bytes));
    // Note [handler threads]: no thread quota. gRPC's sync server refuses a call ("Server
    // Threadpool Exhausted") rather than queue it when a quota is reached, and sync Step calls
    // hold their thread until every trainer arrived. Threads follow the calls in flight, which the
    // clients bound (per trainer and table: one lookup, one step's pushes, one step); streams per
    // connection are capped so no single peer can open more. The Step calls that wait (and so
    // hold threads) are bounded by the service instead, which refuses only calls that would wait
    // and names the limit (Note [waiting steps] in service.cpp).
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxStreamsPerConnection);
    // gRPC's own memory (buffers of connections and of calls in flight) is bounded by a quota;
    // only its memory: SetMaxThreads would be the thread quota refused above.
    grpc::ResourceQuota quota("gradwire-ps-server");
    quota.Resize(static_cast<size_t>(grpc_memory_bytes(options)));
    builder.SetResourceQuota(quota);
    // Without this gRPC sets SO_REUSEPORT, and a second server could bind a port in use.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
    // Note [idle pollers]: a poller that takes a call is replaced at once when fewer than
    // MIN_POLLERS remain, and a poller above MAX_POLLERS exits when its call ends. With several
    // trainers calling at once a cap of 2 made the server create and end a thread for most calls;
    // idle pollers cost nothing but a sleeping thread, so up to kIdlePollers stay.
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, kIdlePollers);
    server_ = builder.BuildAndStart();
    if (!server_ || port <= 0) {
      const bool tls = !options.tls_cert_file.empty();
      throw ConfigError("gradwire: the parameter server cannot listen on " + options.listen +
                        (tls ? " with TLS (the address is in use or not of this host, or the "
                               "certificate '" +
                                   options.tls_cert_file + "' and key '" + options.tls_key_file +
                                   "' are not a valid PEM pair)"
                             : " (the address is in use or not of this host)") +
                        ". Pick another --listen HOST:PORT (port 0 picks a free one)" +
                        (tls ? " or check the TLS files." : "."));
    }
    address_ = listen_.with_port(port);
    if (options.timeline_name.empty()) {
      name = "ps server " + address_;
      service_->set_thread_name(name + " calls");
    }
    // A server that restored tables was restarted (or started again on a job's checkpoints).
    if (restored_tables > 0) {
      timeline::instant("restart", "ps",
                        {{"server", name},
                         {"address", address_},
                         {"tables", restored_tables},
                         {"restored", restored_what},
                         {"dir", options.checkpoint_dir}});
    }
    const std::string warning = plaintext_warning(listen_, !options.tls_cert_file.empty());
    if (!warning.empty()) std::cerr << warning << std::endl;
    if (publisher_) publisher_->attach(address_, &metrics_);
  }

  ~ServerImpl() override { shutdown(std::chrono::milliseconds(2000)); }

  std::string address() const override { return address_; }
  std::string metrics_address() const override {
    return publisher_ ? publisher_->address() : std::string();
  }

  void shutdown(std::chrono::milliseconds grace) override {
    {
      const std::lock_guard<std::mutex> lock(state_mutex_);
      if (shutting_down_) return;
      shutting_down_ = true;
    }
    service_->begin_stop();  // waiting calls end now, not at the grace's end
    // Note [quick shutdown]: gRPC's Shutdown(deadline) also waits for idle connections to answer
    // its GOAWAY ping, which a client that is not polling its channel does only when its backup
    // poller wakes: a server with a trainer connected but no call running took its whole grace.
    // So the server waits for its own handlers (at most the grace), then gives their answers
    // kAnswerFlush to leave, and whatever connection is left is closed at that deadline.
    constexpr std::chrono::milliseconds kAnswerFlush{200};
    const auto until = std::chrono::steady_clock::now() + grace;
    const bool idle = service_->wait_for_calls(until);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    const auto flush = idle ? std::clamp(left, std::chrono::milliseconds(0), kAnswerFlush)
                            : std::chrono::milliseconds(0);
    server_->Shutdown(std::chrono::system_clock::now() + flush);
    service_->stop_channels();
    // No call runs any more: the files hold the final state.
    if (checkpoints_.enabled()) {
      try {
        checkpoints_.write_all(tables_.all());
      } catch (const std::exception& error) {
        std::cerr << "gradwire-ps-server: checkpoint at shutdown failed: " << error.what()
                  << std::endl;
      }
    }
    if (publisher_) publisher_->detach(&metrics_);
    {
      const std::lock_guard<std::mutex> lock(state_mutex_);
      stopped_ = true;
    }
    stopped_cv_.notify_all();
  }

  void wait() override {
    std::unique_lock<std::mutex> lock(state_mutex_);
    stopped_cv_.wait(lock, [this] { return stopped_; });
  }

 private:
  // What the metrics read at scrape time: the tables' steps and pending bytes, the waiting calls,
  // the channels (docs/observability.md).
  ServerGauges gauges(int64_t restored_tables) {
    ServerGauges gauges;
    gauges.tables = [this] {
      std::vector<ServerGauges::Table> tables;
      for (const auto& shard : tables_.all()) {
        tables.push_back({shard->config().name, shard->step(), shard->pending_bytes(),
                          shard->max_pending_bytes()});
      }
      return tables;
    };
    gauges.total_pending_bytes = [this] { return tables_.pending_budget().held(); };
    gauges.max_total_pending_bytes = options_.max_total_pending_bytes;
    gauges.waiting_calls = [this] { return service_->waiting_calls(); };
    gauges.max_waiting_calls = options_.max_waiting_steps;
    gauges.channels = [this] { return static_cast<int64_t>(service_->channels()); };
    gauges.restored_tables = restored_tables;
    return gauges;
  }

  const ServerOptions options_;
  // Serves the trainers' call channels; shared by the servers started together (start_servers),
  // and declared first so that it outlives the service whose handlers it runs.
  const std::shared_ptr<rpc::ChannelHub> hub_;
  // Serves metrics_ (shared by the servers started together with the same metrics address).
  const std::shared_ptr<MetricsPublisher> publisher_;
  ServerMetrics metrics_;  // before the checkpoints and the service, which count into it
  const ListenAddress listen_;
  TableRegistry tables_;
  ServerCheckpoints checkpoints_;
  std::unique_ptr<ParameterServerService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;

  std::mutex state_mutex_;
  std::condition_variable stopped_cv_;
  bool shutting_down_ = false;  // guarded by state_mutex_
  bool stopped_ = false;        // guarded by state_mutex_
};

}  // namespace

int64_t grpc_memory_bytes(const ServerOptions& options) {
  if (options.max_grpc_memory_bytes > 0) return options.max_grpc_memory_bytes;
  int64_t bytes = 0;
  if (__builtin_mul_overflow(options.max_message_bytes, kGrpcMemoryMessages, &bytes)) {
    bytes = std::numeric_limits<int64_t>::max();
  }
  return std::max(bytes, kMinGrpcMemoryBytes);
}

ServerOptions resolve(const ServerOptions& options, const EnvMap& env) {
  ServerOptions resolved = options;
  resolved.token = rpc::load_token(resolved.token.value_or(""), resolved.token_file, env);
  if (!resolved.host_identity) resolved.host_identity = local_host_identity(env);
  check_options(resolved);
  return resolved;
}

std::unique_ptr<Server> start_server(const ServerOptions& options) {
  return start_server(options, EnvMap::from_process());
}

std::unique_ptr<Server> start_server(const ServerOptions& options, const EnvMap& env) {
  return std::move(start_servers({options}, env).front());
}

std::vector<std::unique_ptr<Server>> start_servers(const std::vector<ServerOptions>& options) {
  return start_servers(options, EnvMap::from_process());
}

std::vector<std::unique_ptr<Server>> start_servers(const std::vector<ServerOptions>& options,
                                                   const EnvMap& env) {
  if (options.empty()) throw ConfigError("gradwire: start_servers needs at least one server");
  std::vector<ServerOptions> resolved;
  for (const ServerOptions& one : options) resolved.push_back(resolve(one, env));
  const auto hub = std::make_shared<rpc::ChannelHub>();
  // One endpoint per metrics address, shared by the servers that name it.
  std::map<std::string, std::shared_ptr<MetricsPublisher>> publishers;
  for (const ServerOptions& one : resolved) {
    if (!one.metrics_listen.empty() && publishers.count(one.metrics_listen) == 0) {
      const auto publisher = std::make_shared<MetricsPublisher>(one.metrics_listen);
      const std::string warning = metrics_exposure_warning(publisher->address());
      if (!warning.empty()) std::cerr << warning << std::endl;
      publishers[one.metrics_listen] = publisher;
    }
  }
  std::vector<std::unique_ptr<Server>> servers;
  for (const ServerOptions& one : resolved) {
    const auto publisher = publishers.find(one.metrics_listen);
    servers.push_back(std::make_unique<ServerImpl>(
        one, hub, publisher == publishers.end() ? nullptr : publisher->second));
    // Earlier ones stop on a throw.
  }
  return servers;
}

}  // namespace gradwire::ps
