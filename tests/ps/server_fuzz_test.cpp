// A deterministic fuzz test of every method of the parameter-server service (the list is read
// from ps.proto's descriptor), in-process, through grpc::GenericStub with raw request bytes
// (built by server_fuzz_requests.h): random bytes (0 to 4 KiB, and a few around 1 MiB, one above
// the server's request limit), valid requests with 1 to 4 byte mutations (bit flip, overwrite,
// insert, delete, duplicate, truncate), and well-formed messages with hostile values. Each is sent
// without a token, with a wrong one (malformed forms in turn) and with the right one, each call
// under a 2 s deadline; seeds are fixed (std::mt19937_64).
//
// Expectations: every call completes; without the right token a call answers UNAUTHENTICATED
// naming what was wrong (and never echoing the token), or what gRPC answers before any handler
// runs: INTERNAL with no message for bytes that do not parse, RESOURCE_EXHAUSTED above the size
// limit; with the right token, never UNAUTHENTICATED, never the handler's INTERNAL (an exception
// it did not expect) and no error message above 1 KiB; afterwards the server answers and the two
// trained tables are as recorded: rows bit for bit, steps, no pending gradients or newer attempt.
//
// The rule that keeps that comparison exact: requests without the right token address the two
// recorded tables (and a name that must not come to exist); requests with it address two tables
// made for fuzzing, a fresh name and unknown names, and an authenticated request is sent only if
// it does not parse as its method's request, or parses naming none of the recorded names (the
// test parses with the same protobuf code as the server, so it sees what the handler would). The
// server has no checkpoint directory: Checkpoint writes nothing and Resume can rewind nothing.
// Authenticated CreateTable requests that would build a table of more than kMaxBuiltTrainers
// trainers are held back too, to keep the test's memory small (--max-trainers bounds them at
// 1024: NumTrainersAreBounded).
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/stubs/logging.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>

#include <future>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "ps/messages/service_messages.h"
#include "rpc/auth.h"
#include "rpc/wire.h"
#include "server_fuzz_requests.h"
#include "server_test_support.h"

namespace gradwire::ps {
namespace {

using namespace std::chrono_literals;
using google::protobuf::Message;
using testing::ServerClient;
using testing::table_config;
using namespace testing::fuzz;  // NOLINT(google-build-using-namespace): the requests

constexpr char kServicePath[] = "/gradwire.ps.v1.ParameterServer/";
constexpr size_t kMiB = size_t{1} << 20;
constexpr int64_t kMaxMessageBytes = 2 * kMiB;  // the fuzzed server's request and answer limit
constexpr int64_t kMaxTableBytes = 256 << 10;   // bounds what fuzzed CreateTable calls build
constexpr size_t kMaxErrorBytes = 1024;
constexpr auto kCallDeadline = 2s;
constexpr int kRandomRequests = 100;
constexpr int kMutatedRequests = 150;
constexpr int kMaxBuiltTrainers = 64;

// The names a request addresses; the two sets have names of equal lengths, so that one
// mutation hits both at the same place.
constexpr Targets kRecorded{"kept_sync", "kept_async", "leak_probe"};
constexpr Targets kFuzzed{"fuzz_sync", "fuzz_async", "fuzz_fresh"};

std::string hex_prefix(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 32); ++i) {
    text += kDigits[static_cast<unsigned char>(bytes[i]) >> 4];
    text += kDigits[static_cast<unsigned char>(bytes[i]) & 15];
  }
  return text + (bytes.size() > 32 ? "..." : "") + " (" + std::to_string(bytes.size()) + " bytes)";
}

// --- Calls --------------------------------------------------------------------------------

struct Outcome {
  grpc::Status status;
  bool completed = false;
};

// Raw calls. The channel sends up to 8 MiB, so that the server's own limit is what refuses, and
// takes error messages of up to 4 MiB, so that an oversize one arrives to be measured (gRPC's
// default limit of 8 KiB would refuse it, and now and then the next call on the channel too).
class RawClient {
 public:
  explicit RawClient(const std::string& address) : stub_(channel(address)) {}

  // `authorization`: the metadata value, none when empty.
  Outcome call(const std::string& method, const std::string& request,
               const std::string& authorization) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    if (!authorization.empty()) {
      context.AddMetadata(rpc::kAuthorizationMetadataKey, authorization);
    }
    grpc::Slice slice(request);
    const grpc::ByteBuffer buffer(&slice, 1);
    grpc::ByteBuffer reply;
    std::promise<grpc::Status> done;
    std::future<grpc::Status> status = done.get_future();
    stub_.UnaryCall(&context, kServicePath + method, grpc::StubOptions(), &buffer, &reply,
                    [&done](grpc::Status result) { done.set_value(std::move(result)); });
    Outcome outcome;
    outcome.completed = status.wait_for(kCallDeadline + 10s) == std::future_status::ready;
    if (!outcome.completed) context.TryCancel();
    outcome.status = status.get();
    return outcome;
  }

 private:
  static std::shared_ptr<grpc::Channel> channel(const std::string& address) {
    grpc::ChannelArguments arguments;
    arguments.SetMaxSendMessageSize(8 * kMiB);
    arguments.SetInt(GRPC_ARG_MAX_METADATA_SIZE, 4 * kMiB);
    return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments);
  }

  grpc::GenericStub stub_;
};

// Wrong values of the authorization metadata, tried in turn.
std::vector<std::string> wrong_authorizations() {
  const std::string token = testing::kToken;
  return {"Bearer wrong-token",
          "Bearer " + token + "x",
          "Bearer " + token.substr(0, token.size() - 1),
          token,
          "bearer " + token,
          "Bearer  " + token,
          "Basic " + token,
          "Bearer ",
          "Bearer " + std::string(4096, 'a')};
}

// Whether `bytes` parse as `method`'s request, and what it names (table, or config.name).
struct Parsed {
  bool ok = false;
  std::string table;
  std::vector<std::string> parts;  // a Batch: the table each part names
  int64_t num_trainers = 0;
};
Parsed parse(const std::string& method, const std::string& bytes) {
  const std::unique_ptr<Message> request = new_request(method);
  Parsed parsed;
  parsed.ok = request->ParseFromString(bytes);
  if (auto* create = dynamic_cast<v1::CreateTableRequest*>(request.get())) {
    parsed.table = create->config().name();
    parsed.num_trainers = create->config().num_trainers();
  } else if (auto* batch = dynamic_cast<v1::BatchRequest*>(request.get())) {
    for (const auto& part : batch->pushes()) parsed.parts.push_back(part.table());
    for (const auto& part : batch->steps()) parsed.parts.push_back(part.table());
    for (const auto& part : batch->lookups()) parsed.parts.push_back(part.table());
  } else if (const auto* field = request->GetDescriptor()->FindFieldByName("table")) {
    parsed.table = request->GetReflection()->GetString(*request, field);
  }
  return parsed;
}

// The rule of the top comment: which authenticated requests are sent.
bool may_send_authenticated(const std::string& method, const Parsed& parsed) {
  if (!parsed.ok) return true;
  const std::set<std::string> recorded = {kRecorded.sync, kRecorded.async, kRecorded.fresh};
  if (recorded.count(parsed.table)) return false;
  for (const std::string& table : parsed.parts) {
    if (recorded.count(table)) return false;  // a Batch with a part about a recorded table
  }
  const bool exists = parsed.table == kFuzzed.sync || parsed.table == kFuzzed.async;
  return method != "CreateTable" || exists || parsed.num_trainers <= kMaxBuiltTrainers;
}

class ServerFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options = testing::test_server_options();
    options.max_message_bytes = kMaxMessageBytes;
    options.max_request_bytes = kMaxMessageBytes;
    options.max_trainers = 4096;  // MissingTrainerListsAreBounded uses 3000
    options.max_table_bytes = kMaxTableBytes;
    server_ = start_server(options);
    client_ = std::make_unique<ServerClient>(server_->address());
    raw_ = std::make_unique<RawClient>(server_->address());
  }
  void TearDown() override { server_->shutdown(1s); }

  // Sends `request` three times: without a token, with a wrong one (`kept`, the version about
  // the recorded tables) and with the right one (`fuzzed`, when the rule allows it).
  void send_all_ways(const std::string& method, const std::string& what, const std::string& kept,
                     const std::string& fuzzed) {
    const std::vector<std::string> wrong = wrong_authorizations();
    check_refused(method, what, kept, "", raw_->call(method, kept, ""));
    const std::string& authorization = wrong[wrong_turn_++ % wrong.size()];
    check_refused(method, what, kept, authorization, raw_->call(method, kept, authorization));
    const Parsed parsed = parse(method, fuzzed);
    if (!may_send_authenticated(method, parsed)) {
      ++held_back_;
      return;
    }
    const Outcome outcome = raw_->call(method, fuzzed, rpc::authorization_value(testing::kToken));
    const grpc::Status& status = outcome.status;
    const std::string context = method + " " + what + ", right token, request " +
                                hex_prefix(fuzzed) + ": " + std::to_string(status.error_code()) +
                                " " + status.error_message().substr(0, 200);
    ++calls_;
    ++answers_[method][status.error_code()];
    EXPECT_TRUE(outcome.completed) << "hang: " << context;
    EXPECT_NE(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << context;
    if (!parsed.ok && static_cast<int64_t>(fuzzed.size()) <= kMaxMessageBytes) {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL) << "unparsable: " << context;
    }
    EXPECT_EQ(status.error_message().find("failed on the server"), std::string::npos)
        << "an unexpected exception: " << context;
    EXPECT_LE(status.error_message().size(), kMaxErrorBytes) << context;
  }

  void check_refused(const std::string& method, const std::string& what, const std::string& request,
                     const std::string& authorization, const Outcome& outcome) {
    const grpc::Status& status = outcome.status;
    const std::string context = method + " " + what + ", authorization '" +
                                authorization.substr(0, 40) + "', request " + hex_prefix(request) +
                                ": " + std::to_string(status.error_code()) + " " +
                                status.error_message().substr(0, 200);
    ++calls_;
    EXPECT_TRUE(outcome.completed) << "hang: " << context;
    const bool oversize = static_cast<int64_t>(request.size()) > kMaxMessageBytes;
    if (oversize) {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << context;
    } else if (!parse(method, request).ok) {
      // gRPC's own answer before the handler runs: the request does not parse.
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL) << context;
      EXPECT_EQ(status.error_message(), "") << context;
    } else {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << context;
      const std::string expected =
          authorization.rfind("Bearer ", 0) == 0 && authorization.size() > 7 ? "wrong token"
                                                                             : "missing token";
      EXPECT_EQ(status.error_message().rfind(expected, 0), 0u) << context;
    }
    if (authorization.size() > 7) {
      EXPECT_EQ(status.error_message().find(authorization.substr(7)), std::string::npos)
          << "the token is echoed: " << context;
    }
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<ServerClient> client_;
  std::unique_ptr<RawClient> raw_;
  size_t calls_ = 0;
  size_t wrong_turn_ = 0;  // which of wrong_authorizations() comes next
  size_t held_back_ = 0;
  std::map<std::string, std::map<int, int>> answers_;  // right-token calls: method -> code -> n
};

// The recorded state of a table: its rows and its step.
struct TableState {
  at::Tensor rows;
  int64_t step = -1;
};

TEST_F(ServerFuzz, EveryMethodRefusesWithoutTheTokenAndKeepsTheTables) {
  const TableConfig kept_sync = table_config(kRecorded.sync, kRows, kDim, UpdateMode::kSync);
  const TableConfig kept_async = table_config(kRecorded.async, kRows, kDim);
  for (const TableConfig& config :
       {kept_sync, kept_async, table_config(kFuzzed.sync, kRows, kDim, UpdateMode::kSync),
        table_config(kFuzzed.async, kRows, kDim)}) {
    ASSERT_TRUE(client_->create(config).ok()) << config.name;
  }
  const at::Tensor all = at::arange(kRows, at::kLong);
  for (int64_t step = 0; step < 2; ++step) {
    const at::Tensor grads = at::arange(2 * kDim, at::kFloat).reshape({2, kDim}) + step;
    ASSERT_TRUE(client_->push(kRecorded.async, 0, 0, testing::ids_tensor({1, 7}), grads).ok());
    ASSERT_TRUE(client_->push(kRecorded.sync, 0, step, testing::ids_tensor({2, 5}), grads).ok());
    ASSERT_TRUE(client_->step(kRecorded.sync, 0, step).ok());
  }
  const auto state = [&](const TableConfig& config) {
    v1::CreateTableResponse created;
    EXPECT_TRUE(client_->create(config, 0, 1, &created).ok());
    EXPECT_FALSE(created.created());
    return TableState{client_->rows(config.name, all), created.step()};
  };
  const TableState sync_before = state(kept_sync);
  const TableState async_before = state(kept_async);
  ASSERT_EQ(sync_before.step, 2);
  ASSERT_EQ(async_before.step, 2);

  const google::protobuf::LogSilencer quiet;  // parsing logs every string that is not UTF-8
  const std::string big_name(kMiB, 'n');
  for (int m = 0; m < service().method_count(); ++m) {
    const std::string method = service().method(m)->name();
    SCOPED_TRACE(method);
    std::mt19937_64 rng(0x9e3779b97f4a7c15ULL + m);
    for (int i = 0; i < kRandomRequests; ++i) {
      const std::string bytes = random_bytes(rng() % 4097, rng);
      send_all_ways(method, "random #" + std::to_string(i), bytes, bytes);
    }
    for (const size_t length : {kMiB - 1000, kMiB, kMiB + 4096, 2 * kMiB + 100}) {
      const std::string bytes = random_bytes(length, rng);
      send_all_ways(method, "large random", bytes, bytes);
    }
    // Nested unknown groups beyond protobuf's recursion limit.
    std::string groups;
    for (int i = 0; i < 100000; ++i) groups += '\x7b';  // start group, field 15
    send_all_ways(method, "nested groups", groups, groups);

    const std::vector<std::string> kept_seeds = valid_requests(method, kRecorded);
    const std::vector<std::string> fuzzed_seeds = valid_requests(method, kFuzzed);
    ASSERT_FALSE(kept_seeds.empty()) << "no seed requests for " << method << "; add some";
    ASSERT_EQ(kept_seeds.size(), fuzzed_seeds.size());
    for (size_t i = 0; i < kept_seeds.size(); ++i) {
      send_all_ways(method, "seed #" + std::to_string(i), kept_seeds[i], fuzzed_seeds[i]);
    }
    // Batch, the only call that carries lookups, pushes and steps, gets the mutations their own
    // methods got before they were removed: its seeds are theirs as parts.
    const int mutations = method == "Batch" ? 4 * kMutatedRequests : kMutatedRequests;
    for (int i = 0; i < mutations; ++i) {
      const size_t seed = rng() % kept_seeds.size();
      std::mt19937_64 same = rng;  // the same mutations for both versions
      const std::string kept = mutate(kept_seeds[seed], rng);
      const std::string fuzzed = mutate(fuzzed_seeds[seed], same);
      send_all_ways(method, "mutation #" + std::to_string(i) + " of seed #" + std::to_string(seed),
                    kept, fuzzed);
    }
    const std::vector<std::string> kept_hostile = hostile_requests(method, kRecorded, big_name);
    const std::vector<std::string> fuzzed_hostile = hostile_requests(method, kFuzzed, big_name);
    ASSERT_EQ(kept_hostile.size(), fuzzed_hostile.size());
    for (size_t i = 0; i < kept_hostile.size(); ++i) {
      send_all_ways(method, "hostile #" + std::to_string(i), kept_hostile[i], fuzzed_hostile[i]);
    }
  }
  for (const auto& [method, codes] : answers_) {
    std::string text;
    for (const auto& [code, count] : codes) {
      text += " " + std::to_string(code) + ":" + std::to_string(count);
    }
    std::printf("[ fuzz     ] %s right-token answers (code:count):%s\n", method.c_str(),
                text.c_str());
  }
  std::printf("[ fuzz     ] %zu calls, %zu authenticated requests held back by the rule\n", calls_,
              held_back_);

  // The server answers, and the recorded tables are as they were, bit for bit.
  const TableState sync_after = state(kept_sync);
  const TableState async_after = state(kept_async);
  EXPECT_EQ(sync_after.step, sync_before.step);
  EXPECT_EQ(async_after.step, async_before.step);
  EXPECT_TRUE(at::equal(sync_after.rows, sync_before.rows));
  EXPECT_TRUE(at::equal(async_after.rows, async_before.rows));
  // No unauthenticated CreateTable built the probe table.
  at::Tensor rows;
  EXPECT_EQ(client_->lookup(kRecorded.fresh, all, &rows).error_code(), grpc::StatusCode::NOT_FOUND);
  // Nothing pending in the sync step and no newer attempt admitted: a step of attempt 0 with no
  // pushes is applied and changes no row (SGD without momentum).
  int64_t new_step = -1;
  const grpc::Status step = client_->step(kRecorded.sync, 0, sync_before.step, 10s, &new_step);
  EXPECT_TRUE(step.ok()) << step.error_message();
  EXPECT_EQ(new_step, sync_before.step + 1);
  EXPECT_TRUE(at::equal(client_->rows(kRecorded.sync, all), sync_before.rows));
}

// Note [attempt limits] (issue 37, finding 6) over gRPC; the call channels' twin is
// PsSharedMemory.HostileAttemptNumbersAreRefusedOnBothTransportsAndLockNoTable. Every call that
// admits attempts (Resume, and a push and a step in a Batch) refuses an attempt far above
// the newest or an incarnation far after the server's clock with INVALID_ARGUMENT, and nothing
// changes. Before, one Step of attempt 2^63 - 1 was taken: the step in progress was discarded and
// every later call of attempt 0, 1 or 10^18 was ABORTED until the server restarted.
TEST_F(ServerFuzz, HostileAttemptNumbersAreRefusedAndLockNoTable) {
  const TableConfig config = table_config("attempts", kRows, kDim, UpdateMode::kSync);
  ASSERT_TRUE(client_->create(config).ok());
  const at::Tensor one = testing::ids_tensor({1});
  const at::Tensor before = client_->rows(config.name, one);
  ASSERT_TRUE(client_->push(config.name, 0, 0, one, at::ones({1, kDim})).ok());
  const auto now_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count());
  for (const v1::Attempt& attempt : hostile_attempts(now_ns)) {
    for (const auto& [method, bytes] : attempt_requests(config.name, 0, attempt)) {
      const Outcome outcome = raw_->call(method, bytes, rpc::authorization_value(testing::kToken));
      const std::string context = method + " of " + attempt.ShortDebugString() + ": " +
                                  std::to_string(outcome.status.error_code()) + " " +
                                  outcome.status.error_message();
      ASSERT_TRUE(outcome.completed) << context;
      EXPECT_EQ(outcome.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << context;
      EXPECT_NE(outcome.status.error_message().find("nothing was changed"), std::string::npos)
          << context;
    }
  }
  // Attempt 0's step is as it was: its push stays and the step completes with it (SGD lr 0.5).
  int64_t new_step = -1;
  const grpc::Status step = client_->step(config.name, 0, 0, 10s, &new_step);
  ASSERT_TRUE(step.ok()) << step.error_message();
  EXPECT_EQ(new_step, 1);
  EXPECT_TRUE(at::allclose(client_->rows(config.name, one), before - 0.5));
  // A restarted job is taken; its attempt then replaces attempt 0.
  ASSERT_TRUE(client_->resume(config.name, 0, 1, /*restart=*/1).ok());
  EXPECT_EQ(client_->push(config.name, 0, 1, one, at::ones({1, kDim})).error_code(),
            grpc::StatusCode::ABORTED);
}

// Names of 1 MiB are cut in the errors of every method and Batch part that takes a table name.
TEST_F(ServerFuzz, UnknownTableNamesOfAMebibyteAreCutInErrors) {
  const std::string name(kMiB, 'n');
  v1::ResumeRequest resume;
  resume.set_table(name);
  v1::BatchRequest lookup;
  lookup.add_lookups()->set_table(name);
  v1::BatchRequest push;
  push.add_pushes()->set_table(name);
  v1::BatchRequest step;
  step.add_steps()->set_table(name);
  for (const auto& [method, request] : std::vector<std::pair<std::string, const Message*>>{
           {"Resume", &resume}, {"Batch", &lookup}, {"Batch", &push}, {"Batch", &step}}) {
    const std::string what = method + " " + request->ShortDebugString().substr(0, 10);
    const Outcome outcome =
        raw_->call(method, request->SerializeAsString(), rpc::authorization_value(testing::kToken));
    ASSERT_TRUE(outcome.completed) << what;
    EXPECT_EQ(outcome.status.error_code(), grpc::StatusCode::NOT_FOUND) << what;
    EXPECT_LE(outcome.status.error_message().size(), kMaxErrorBytes) << what;
    EXPECT_NE(outcome.status.error_message().find("1048576 characters"), std::string::npos)
        << what << ": " << outcome.status.error_message().substr(0, 200);
  }
}

// CreateTable's errors for a bad config (validate() in src/ps/core/table_config.cpp) cut the
// requested name as every other method does. Before, a name of 1 MiB came back whole, and from
// about 8 KiB on the caller's channel (gRPC's default metadata limit) refused the answer.
TEST_F(ServerFuzz, CreateTableErrorsDoNotEchoLongNames) {
  for (const size_t length : {size_t{2000}, size_t{10000}, kMiB}) {
    TableConfig config = table_config(std::string(length, 'n'));
    const grpc::Status status = client_->create(config);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << length;
    EXPECT_LE(status.error_message().size(), kMaxErrorBytes) << length;
  }
}

// num_trainers is bounded (--max-trainers, 1024 by default): a sync table keeps state per
// trainer, which max_table_bytes does not count. Before, a 10 x 4 table of 2^22 trainers was
// created on a server with max_table_bytes 256 KiB (about 140 MB).
TEST_F(ServerFuzz, NumTrainersAreBounded) {
  constexpr int kTrainers = 1 << 22;
  const grpc::Status status =
      client_->create(table_config("crowd", kRows, kDim, UpdateMode::kSync, kTrainers));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_code() << " " << status.error_message();
  EXPECT_NE(status.error_message().find("max_trainers"), std::string::npos)
      << status.error_message();
}

// A sync Step's DEADLINE_EXCEEDED message names at most 16 missing trainers
// (describe_missing_trainers in src/ps/server/service.cpp). Before, 3,000 trainers made a message
// of 16,960 bytes, which the caller's channel refused (RESOURCE_EXHAUSTED instead of the timeout).
TEST_F(ServerFuzz, MissingTrainerListsAreBounded) {
  const TableConfig config = table_config("crowd", kRows, kDim, UpdateMode::kSync, 3000);
  ASSERT_TRUE(client_->create(config).ok());
  const grpc::Status status = client_->step(config.name, 0, 0, 1500ms);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_LE(status.error_message().size(), kMaxErrorBytes);
}

}  // namespace
}  // namespace gradwire::ps
