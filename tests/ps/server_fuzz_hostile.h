// The hostile fuzz suite's caller and fixture (server_fuzz_hostile_test.cpp, whose top comment says
// what is sent and expected): one caller that sends a request over either transport (gRPC with the
// token, or its call channel in shared memory), the regions a hostile trainer makes, what this
// process maps (the in-process server's mappings are this process's), and the fixture: a server
// with small shared-memory caps, the tables, the victim, the checks of every answer and of the
// server afterwards.
#pragma once

#include <fcntl.h>
#include <google/protobuf/message.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gradwire/ps/table.h"
#include "ps/messages/service_messages.h"
#include "rpc/auth.h"
#include "rpc/call_channel.h"
#include "rpc/shared_memory.h"
#include "rpc/wire.h"
#include "server_test_support.h"

// Named for this suite (not anonymous: unity batches put other tests' names in gradwire::ps).
namespace gradwire::ps::server_fuzz_hostile_test {

using namespace std::chrono_literals;
using google::protobuf::Message;
using testing::table_config;

enum class Transport { kGrpc, kChannel };
inline const char* transport_name(Transport transport) {
  return transport == Transport::kGrpc ? "grpc" : "channel";
}

inline constexpr auto kCallDeadline = 5s;

struct Answer {
  grpc::Status status;
  bool sent = true;       // false: the channel cannot carry it (not its method, above a slot)
  bool completed = true;  // false: no answer within the deadline and 5 s more
};

// The fuzzing trainer: the job's token over gRPC (requests as raw bytes through GenericStub, so
// that what is sent is exactly what was built), and its call channel to the server, which the
// server grants at a probed CreateTable (create()).
class Caller {
 public:
  Caller(const std::string& address, std::string host)
      : address_(address), host_(std::move(host)), stub_(make_channel(address)) {}

  rpc::SharedRegions& regions() { return regions_; }

  // A probed CreateTable (host, probe, and a new channel when none is usable or `new_channel`):
  // what the client sends (src/ps/client/client.cpp).
  grpc::Status create(const TableConfig& config, v1::CreateTableResponse* response,
                      bool new_channel = false) {
    v1::CreateTableRequest request;
    *request.mutable_config() = to_message(config);
    request.set_num_servers(1);
    request.set_host(host_);
    *request.mutable_probe() = regions_.probe();
    const bool fresh = new_channel || !channel_ || !channel_->usable();
    if (fresh) channel_ = std::make_unique<rpc::ChannelClient>(regions_, address_);
    *request.mutable_channel() = channel_->reference();
    const Answer answer = call(Transport::kGrpc, "CreateTable", request, response);
    if (answer.status.ok() && response->channel() && fresh) channel_->attached();
    return answer.status;
  }
  bool channel_usable() const { return channel_ && channel_->usable(); }
  const v1::SharedBytes& channel_ref() const { return channel_->reference(); }

  // A "Lookup", "Push" or "Step" request goes as the one part of a Batch (the server has no other
  // door for them), and the part's answer is put into `response` (a LookupResponse or a
  // StepResponse; a push's answer has nothing).
  Answer call(Transport transport, const std::string& method, const Message& request,
              Message* response) {
    if (method != "Lookup" && method != "Push" && method != "Step") {
      return send(transport, method, request, response);
    }
    v1::BatchRequest batch;
    Message* part = method == "Lookup" ? static_cast<Message*>(batch.add_lookups())
                    : method == "Push" ? static_cast<Message*>(batch.add_pushes())
                                       : static_cast<Message*>(batch.add_steps());
    part->CopyFrom(request);
    v1::BatchResponse answer;
    const Answer result = send(transport, "Batch", batch, &answer);
    if (result.status.ok() && method == "Lookup" && answer.lookups_size() == 1) {
      response->CopyFrom(answer.lookups(0));
    }
    if (result.status.ok() && method == "Step" && answer.steps_size() == 1) {
      response->CopyFrom(answer.steps(0));
    }
    return result;
  }

 private:
  static std::shared_ptr<grpc::Channel> make_channel(const std::string& address) {
    grpc::ChannelArguments arguments;
    arguments.SetMaxSendMessageSize(8 << 20);
    arguments.SetMaxReceiveMessageSize(8 << 20);
    arguments.SetInt(GRPC_ARG_MAX_METADATA_SIZE, 4 << 20);  // an oversize message arrives
    return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments);
  }

  Answer send(Transport transport, const std::string& method, const Message& request,
              Message* response) {
    return transport == Transport::kGrpc ? over_grpc(method, request, response)
                                         : over_channel(method, request, response);
  }

  Answer over_grpc(const std::string& method, const Message& request, Message* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    context.AddMetadata(rpc::kAuthorizationMetadataKey, rpc::authorization_value(testing::kToken));
    grpc::Slice slice(request.SerializeAsString());
    const grpc::ByteBuffer buffer(&slice, 1);
    grpc::ByteBuffer reply;
    std::promise<grpc::Status> done;
    std::future<grpc::Status> status = done.get_future();
    stub_.UnaryCall(&context, "/gradwire.ps.v1.ParameterServer/" + method, grpc::StubOptions(),
                    &buffer, &reply,
                    [&done](grpc::Status result) { done.set_value(std::move(result)); });
    Answer answer;
    answer.completed = status.wait_for(kCallDeadline + 5s) == std::future_status::ready;
    if (!answer.completed) context.TryCancel();
    answer.status = status.get();
    grpc::Slice bytes;
    if (answer.status.ok() && (!reply.DumpToSingleSlice(&bytes).ok() ||
                               !response->ParseFromArray(bytes.begin(), bytes.size()))) {
      answer.status = grpc::Status(grpc::StatusCode::DATA_LOSS, "the answer does not parse");
    }
    return answer;
  }

  Answer over_channel(const std::string& method, const Message& request, Message* response) {
    Answer answer;
    answer.sent =
        method == "Batch" && request.ByteSizeLong() <= static_cast<size_t>(rpc::kChannelSlotBytes);
    if (!answer.sent) return answer;
    if (!channel_usable()) {
      answer.status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the channel is not served");
      return answer;
    }
    const auto ticket = channel_->start(rpc::ChannelMethod::kBatch, request,
                                        std::chrono::system_clock::now() + kCallDeadline, 0,
                                        response, &answer.status);
    if (ticket == 0) {
      answer.status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the channel took no call");
      return answer;
    }
    answer.completed =
        channel_->finish(ticket, std::chrono::steady_clock::now() + kCallDeadline + 5s);
    if (!answer.completed) channel_->cancel(ticket);
    return answer;
  }

  const std::string address_;
  const std::string host_;
  grpc::GenericStub stub_;
  rpc::SharedRegions regions_;  // before channel_, which lives in one of its regions
  std::unique_ptr<rpc::ChannelClient> channel_;
};

// --- Regions and descriptors ------------------------------------------------------------------

inline std::string region_name(uint64_t key) {
  char name[40];
  std::snprintf(name, sizeof(name), "gradwire-ps-%016llx", static_cast<unsigned long long>(key));
  return name;
}

// A memfd named `name`, `bytes` long (sparse: costs nothing), sealed against resizing if `seal`.
inline int make_memfd(const std::string& name, off_t bytes, bool seal) {
  const int fd = ::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ::ftruncate(fd, bytes) != 0 ||
      (seal && ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

// --- What this process maps ---------------------------------------------------------------------

// VmSize of this process, in bytes.
inline int64_t vm_size_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoll(line.substr(7)) * 1024;
  }
  return -1;
}

// Bytes of this process's mappings of gradwire regions ("/memfd:gradwire-ps-..."): the trainer's
// own, the server's rows, and what the in-process server mapped of trainers' regions.
inline int64_t gradwire_mapped_bytes() {
  std::ifstream maps("/proc/self/maps");
  int64_t total = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("/memfd:gradwire-ps-") == std::string::npos) continue;
    unsigned long long start = 0;  // NOLINT(google-runtime-int): sscanf's
    unsigned long long end = 0;    // NOLINT(google-runtime-int)
    if (std::sscanf(line.c_str(), "%llx-%llx", &start, &end) == 2) total += end - start;
  }
  return total;
}

// --- The fixture --------------------------------------------------------------------------------

inline constexpr char kHost[] = "hostile-fuzz-host";
inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kMaxMessageBytes = 2 * kMiB;
inline constexpr int64_t kRegionCap = 8 * kMiB;
inline constexpr int64_t kMappedCap = 24 * kMiB;
inline constexpr int64_t kRows = 10;
inline constexpr int64_t kDim = 4;
inline constexpr int64_t kWideDim = 64;  // fz_wide: 1024 rows of 256 bytes
inline constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
inline constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
inline constexpr Transport kBoth[] = {Transport::kGrpc, Transport::kChannel};

enum class Expect { kAny, kOk, kRefused, kExhausted };

inline v1::Tensor ids(const std::vector<int64_t>& values) {
  return rpc::encode_tensor(at::tensor(values, at::kLong));
}
inline v1::Tensor shared_rows(const v1::SharedBytes& ref, int64_t rows) {
  v1::Tensor tensor;
  tensor.set_dtype(v1::FLOAT32);
  tensor.add_shape(rows);
  tensor.add_shape(kDim);
  *tensor.mutable_shared() = ref;
  return tensor;
}
inline v1::Attempt attempt(int64_t restart, uint64_t incarnation) {
  v1::Attempt message;
  message.set_restart(restart);
  message.set_incarnation(incarnation);
  return message;
}
inline TableConfig dense_sync(const std::string& name) {
  TableConfig config = table_config(name, kRows, kDim, UpdateMode::kSync);
  config.kind = TableKind::kDense;
  return config;
}
inline uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// An empty answer of `method` of the service, or of a Batch's part (Caller::call).
inline std::unique_ptr<Message> response_of(const std::string& method) {
  if (method == "Lookup") return std::make_unique<v1::LookupResponse>();
  if (method == "Step") return std::make_unique<v1::StepResponse>();
  if (method == "Push") return std::make_unique<v1::BatchResponse>();  // a push answers nothing
  const auto* service =
      v1::LookupRequest::descriptor()->file()->FindServiceByName("ParameterServer");
  return std::unique_ptr<Message>(
      google::protobuf::MessageFactory::generated_factory()
          ->GetPrototype(service->FindMethodByName(method)->output_type())
          ->New());
}

class HostileFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options = testing::test_server_options();
    options.host_identity = kHost;
    options.max_message_bytes = kMaxMessageBytes;
    options.max_shared_region_bytes = kRegionCap;
    options.max_shared_process_bytes = 16 * kMiB;
    options.max_shared_bytes = kMappedCap;
    server_ = start_server(options);
    caller_ = std::make_unique<Caller>(server_->address(), kHost);
    // Every table is created by a probed CreateTable, the first one opening the channel. A sync
    // dense table's rows live in the server's own memory, which CreateTable names.
    for (const TableConfig& config :
         {dense_sync("victim"), dense_sync("fz_await"), table_config("fz_async", kRows, kDim),
          table_config("fz_sync", kRows, kDim, UpdateMode::kSync),
          table_config("fz_wide", 1024, kWideDim)}) {
      v1::CreateTableResponse created;
      ASSERT_TRUE(caller_->create(config, &created).ok()) << config.name;
      ASSERT_TRUE(created.shared_memory() && created.channel()) << config.name;
      if (config.kind == TableKind::kDense) own_refs_.push_back(created.rows());
    }
    // The victim: assigned, then two steps trained over gRPC.
    v1::AssignRequest assign;
    assign.set_table("victim");
    *assign.mutable_ids() = ids({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    *assign.mutable_rows() =
        rpc::encode_tensor(at::arange(kRows * kDim, at::kFloat).view({kRows, kDim}));
    assign.set_complete(true);
    expect_ok(Transport::kGrpc, "Assign", assign);
    for (int64_t step = 0; step < 2; ++step) {
      v1::PushRequest push;
      push.set_table("victim");
      push.set_step(step);
      *push.mutable_ids() = ids({1, 4});
      *push.mutable_grads() = rpc::encode_tensor(at::ones({2, kDim}));
      expect_ok(Transport::kGrpc, "Push", push);
      v1::StepRequest finish;
      finish.set_table("victim");
      finish.set_step(step);
      expect_ok(Transport::kGrpc, "Step", finish);
    }
    // Only the probed caller, over its channel, is told where the rows are (step -1: no change).
    v1::StepRequest past;
    past.set_table("victim");
    past.set_step(-1);
    v1::StepResponse over_grpc;
    v1::StepResponse over_channel;
    expect_ok(Transport::kGrpc, "Step", past, &over_grpc);
    expect_ok(Transport::kChannel, "Step", past, &over_channel);
    EXPECT_FALSE(over_grpc.has_rows()) << "a Step over gRPC named the server's memory";
    ASSERT_NE(over_channel.rows().key(), 0u) << "no rows reference over the channel";
    own_refs_.push_back(over_channel.rows());
    victim_ = state();
    // The trainer's own region: the valid reference that the fuzz mutates.
    valid_tensor_ = caller_->regions().allocate({64, kDim}, at::kFloat);
    valid_ = *caller_->regions().find(valid_tensor_);
    mapped_before_ = gradwire_mapped_bytes();
    vm_before_ = vm_size_bytes();
  }

  void TearDown() override {
    std::string counts;
    for (const auto& [category, per] : counts_) {
      counts += "\n  " + category + ": " + std::to_string(per[0]) + "/" + std::to_string(per[1]) +
                " (" + std::to_string(per[2]) + " refused)";
    }
    std::printf("[ hostile  ] calls per category, grpc/channel:%s\n", counts.c_str());
    if (!server_) return;
    // Within its grace, plus a margin for a loaded machine (the bound was the grace itself).
    constexpr auto kGrace = 2s;
    const auto start = std::chrono::steady_clock::now();
    server_->shutdown(kGrace);
    EXPECT_LT(std::chrono::steady_clock::now() - start, kGrace + 3s)
        << "the server did not stop within its 2 s grace (and a 3 s margin)";
    caller_.reset();
  }

  // The bytes of rows 0 to 9 of `table`, as a lookup answers them.
  std::string rows_of(const std::string& table) {
    v1::LookupRequest lookup;
    lookup.set_table(table);
    *lookup.mutable_ids() = ids({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    v1::LookupResponse rows;
    expect_ok(Transport::kGrpc, "Lookup", lookup, &rows);
    return rows.rows().data();
  }
  struct State {
    std::string rows;  // their bytes
    int64_t step = -1;
  };
  State state() {
    v1::CreateTableResponse created;
    EXPECT_TRUE(caller_->create(dense_sync("victim"), &created).ok());
    return State{rows_of("victim"), created.step()};
  }

  Answer send(Transport transport, const std::string& method, const Message& request,
              Message* response = nullptr) {
    const std::unique_ptr<Message> ignored = response_of(method);
    if (response == nullptr) response = ignored.get();
    return caller_->call(transport, method, request, response);
  }
  void expect_ok(Transport transport, const std::string& method, const Message& request,
                 Message* response = nullptr) {
    const Answer answer = send(transport, method, request, response);
    EXPECT_TRUE(answer.status.ok())
        << method << " over " << transport_name(transport) << ": " << answer.status.error_message();
  }

  // Sends `request` over `transport` and checks the answer (see the top).
  grpc::Status check(const std::string& category, Transport transport, const std::string& what,
                     const std::string& method, const Message& request, Expect expect,
                     Message* response = nullptr) {
    const Answer answer = send(transport, method, request, response);
    if (!answer.sent) return answer.status;  // not a channel's method, or above its slot
    const grpc::Status& status = answer.status;
    ++counts_[category][transport == Transport::kGrpc ? 0 : 1];
    counts_[category][2] += status.ok() ? 0 : 1;
    const std::string context =
        category + ", " + what + ", " + method + " over " + transport_name(transport) + ": " +
        std::to_string(status.error_code()) + " " + status.error_message().substr(0, 300);
    static const std::set<grpc::StatusCode> kClear = {
        grpc::StatusCode::OK,        grpc::StatusCode::INVALID_ARGUMENT,
        grpc::StatusCode::NOT_FOUND, grpc::StatusCode::RESOURCE_EXHAUSTED,
        grpc::StatusCode::ABORTED,   grpc::StatusCode::FAILED_PRECONDITION};
    EXPECT_TRUE(answer.completed) << "no answer in time: " << context;
    EXPECT_EQ(kClear.count(status.error_code()), 1u) << "not a clear answer: " << context;
    EXPECT_EQ(status.error_message().find("failed on the server"), std::string::npos) << context;
    EXPECT_LE(status.error_message().size(), 1024u) << context;
    if (expect == Expect::kOk) EXPECT_TRUE(status.ok()) << context;
    if (expect == Expect::kRefused) EXPECT_FALSE(status.ok()) << "taken: " << context;
    if (expect == Expect::kExhausted) {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << context;
    }
    if (transport == Transport::kChannel && !caller_->channel_usable()) {
      ADD_FAILURE() << "the channel broke: " << context;
      v1::CreateTableResponse created;  // a new channel, so that the fuzz goes on
      EXPECT_TRUE(caller_->create(table_config("fz_async", kRows, kDim), &created).ok());
    }
    return status;
  }

  // `ref` in every place a request takes a reference, over both transports.
  void send_ref(const std::string& category, const std::string& what, const v1::SharedBytes& ref,
                Expect expect, bool grpc_only = false) {
    v1::LookupRequest into;
    into.set_table("fz_async");
    *into.mutable_ids() = ids({1, 3});
    *into.mutable_rows_into() = ref;
    v1::PushRequest push;
    push.set_table("fz_async");
    *push.mutable_ids() = ids({1, 3});
    *push.mutable_grads() = shared_rows(ref, 2);
    v1::AssignRequest assign;  // fz_await awaits its values: a taken reference is OK
    assign.set_table("fz_await");
    *assign.mutable_ids() = ids({2, 5});
    *assign.mutable_rows() = shared_rows(ref, 2);
    v1::BatchRequest lookups;
    v1::LookupRequest* plain = lookups.add_lookups();
    plain->set_table("fz_async");
    *plain->mutable_ids() = ids({0});
    *lookups.add_lookups() = into;
    v1::BatchRequest pushes;
    *pushes.add_pushes() = push;
    for (const Transport transport : kBoth) {
      if (grpc_only && transport == Transport::kChannel) continue;
      check(category, transport, what + " as rows_into", "Lookup", into, expect);
      check(category, transport, what + " as push.grads", "Push", push, expect);
      check(category, transport, what + " as assign.rows", "Assign", assign, expect);
      check(category, transport, what + " in a batch's lookup", "Batch", lookups, expect);
      check(category, transport, what + " in a batch's push", "Batch", pushes, expect);
    }
  }

  // A region of this process; its mapping is counted as ours, not the server's.
  at::Tensor own_region(int64_t rows) {
    own_mapped_ += (rows * kDim * 4 + 4095) / 4096 * 4096;
    return caller_->regions().allocate({rows, kDim}, at::kFloat);
  }

  // What the server maps of this process's regions stays within --max-shared-bytes.
  void expect_within_caps() {
    const int64_t server_mapped = gradwire_mapped_bytes() - mapped_before_ - own_mapped_;
    EXPECT_LE(server_mapped, kMappedCap) << "the server maps more than --max-shared-bytes";
    EXPECT_LT(vm_size_bytes() - vm_before_, int64_t{4} << 30) << "VmSize grew by 4 GiB or more";
  }

  // The checks after a fuzz (see the top).
  void expect_unharmed() {
    expect_within_caps();
    const State after = state();
    EXPECT_EQ(after.step, victim_.step) << "the victim's step changed";
    EXPECT_EQ(after.rows.size(), size_t{kRows * kDim * 4});
    EXPECT_TRUE(after.rows == victim_.rows) << "the victim's rows changed";
    for (const Transport transport : kBoth) {  // attempt 0 is taken, nothing is pending
      v1::StepRequest step;
      step.set_table("victim");
      step.set_step(victim_.step + (transport == Transport::kGrpc ? 0 : 1));
      v1::StepResponse stepped;
      expect_ok(transport, "Step", step, &stepped);
      EXPECT_EQ(stepped.step(), step.step() + 1) << transport_name(transport);
    }
    EXPECT_TRUE(state().rows == victim_.rows) << "an empty step changed the victim";
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<Caller> caller_;
  std::vector<v1::SharedBytes> own_refs_;  // the server's memory, as it names it
  State victim_;
  at::Tensor valid_tensor_;
  v1::SharedBytes valid_;  // valid_tensor_'s: 64 x kDim floats of this process
  int64_t mapped_before_ = 0;
  int64_t vm_before_ = 0;
  int64_t own_mapped_ = 0;
  std::map<std::string, std::array<int, 3>> counts_;  // category -> grpc calls, channel, refused
};

}  // namespace gradwire::ps::server_fuzz_hostile_test
