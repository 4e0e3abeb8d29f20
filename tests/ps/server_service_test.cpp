// The parameter-server service in-process: tokens on every method, idempotent table creation,
// lookups of the initial rows, async and sync updates, malformed and oversize requests that
// leave the tables unchanged, and a sync step a trainer never finishes.
#include <gtest/gtest.h>

#include <thread>

#include "../launch/test_support.h"
#include "gradwire/common/error.h"
#include "gradwire/ps/server.h"
#include "ps/core/table_shard.h"
#include "ps/messages/service_messages.h"
#include "rpc/wire.h"
#include "server_test_support.h"

namespace gradwire::ps {
namespace {

using namespace std::chrono_literals;
using launch::testing::contains;
using testing::ids_tensor;
using testing::ServerClient;
using testing::table_config;

// The rows a fresh table of `config` starts with (the core's initialiser, one server).
at::Tensor initial_rows(const TableConfig& config, const at::Tensor& ids) {
  return TableShard(config, 0, 1).lookup(ids);
}

class ServiceTest : public ::testing::Test {
 protected:
  void start(ServerOptions options = testing::test_server_options()) {
    server_ = start_server(options);
    client_ = std::make_unique<ServerClient>(server_->address());
  }
  void SetUp() override { start(); }
  void TearDown() override {
    if (server_) server_->shutdown(1s);
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<ServerClient> client_;
};

TEST_F(ServiceTest, EveryMethodRejectsAMissingOrWrongToken) {
  const TableConfig config = table_config();
  ASSERT_TRUE(client_->create(config).ok());
  const at::Tensor all = at::arange(10, at::kLong);
  const at::Tensor before = client_->rows("emb", all);

  for (const std::string token : {std::string(), std::string("wrong-token")}) {
    auto& stub = client_->stub();
    const auto context = [&] {
      auto context = std::make_unique<grpc::ClientContext>();
      context->set_deadline(std::chrono::system_clock::now() + 10s);
      if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
      return context;
    };
    const std::string expected = token.empty() ? "missing token" : "wrong token";
    std::vector<std::pair<std::string, grpc::Status>> results;

    v1::CreateTableRequest create;
    *create.mutable_config() = to_message(table_config("other"));
    create.set_num_servers(1);
    v1::CreateTableResponse create_response;
    results.emplace_back("CreateTable",
                         stub.CreateTable(context().get(), create, &create_response));

    // Lookups, pushes and steps: each alone in a Batch, and together.
    v1::LookupRequest lookup;
    lookup.set_table("emb");
    rpc::encode_tensor(ids_tensor({1}), lookup.mutable_ids());
    v1::PushRequest push;
    push.set_table("emb");
    rpc::encode_tensor(ids_tensor({1}), push.mutable_ids());
    rpc::encode_tensor(at::ones({1, 4}), push.mutable_grads());
    v1::StepRequest step;
    step.set_table("emb");
    v1::BatchRequest lookups;
    *lookups.add_lookups() = lookup;
    v1::BatchRequest pushes;
    *pushes.add_pushes() = push;
    v1::BatchRequest steps;
    *steps.add_steps() = step;
    v1::BatchRequest batch;
    *batch.add_pushes() = push;
    *batch.add_steps() = step;
    *batch.add_lookups() = lookup;
    for (const auto& [what, request] :
         {std::pair{"Batch of a lookup", &lookups}, std::pair{"Batch of a push", &pushes},
          std::pair{"Batch of a step", &steps}, std::pair{"Batch of all three", &batch}}) {
      v1::BatchResponse batch_response;
      results.emplace_back(what, stub.Batch(context().get(), *request, &batch_response));
    }

    v1::CheckpointResponse checkpoint_response;
    results.emplace_back("Checkpoint", stub.Checkpoint(context().get(), v1::CheckpointRequest(),
                                                       &checkpoint_response));
    for (const auto& [method, status] : results) {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << method;
      EXPECT_TRUE(contains(status.error_message(), expected))
          << method << ": " << status.error_message();
      EXPECT_FALSE(contains(status.error_message(), "wrong-token")) << method;
    }
  }
  EXPECT_TRUE(at::equal(client_->rows("emb", all), before));
  at::Tensor rows;
  EXPECT_EQ(client_->lookup("other", ids_tensor({0}), &rows).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServiceTest, CreatingAgainWithAnEqualConfigIsFineAndADifferentOneIsNamed) {
  v1::CreateTableResponse response;
  ASSERT_TRUE(client_->create(table_config(), 0, 1, &response).ok());
  EXPECT_TRUE(response.created());
  EXPECT_EQ(response.step(), 0);
  ASSERT_TRUE(client_->create(table_config(), 0, 1, &response).ok());
  EXPECT_FALSE(response.created());

  const grpc::Status dim = client_->create(table_config("emb", 10, 8));
  EXPECT_EQ(dim.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(contains(dim.error_message(), "table 'emb' exists with 10 x 4, asked 10 x 8"))
      << dim.error_message();
  const grpc::Status mode = client_->create(table_config("emb", 10, 4, UpdateMode::kSync));
  EXPECT_EQ(mode.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(contains(mode.error_message(), "mode")) << mode.error_message();
  const grpc::Status position = client_->create(table_config(), 1, 2);
  EXPECT_EQ(position.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(contains(position.error_message(), "server 0 of 1")) << position.error_message();
}

TEST_F(ServiceTest, CreateRejectsBadConfigsAndShardPositions) {
  EXPECT_EQ(client_->create(table_config("emb", 0, 4)).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(client_->create(table_config("bad name!", 10, 4)).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(client_->create(table_config(), 2, 2).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(client_->create(table_config(), 0, 0).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::CreateTableRequest request;
  *request.mutable_config() = to_message(table_config());
  request.mutable_config()->set_mode(v1::MODE_UNSPECIFIED);
  request.set_num_servers(1);
  v1::CreateTableResponse response;
  const grpc::Status status =
      client_->stub().CreateTable(client_->context().get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(contains(status.error_message(), "mode")) << status.error_message();
  at::Tensor rows;
  EXPECT_EQ(client_->lookup("emb", ids_tensor({0}), &rows).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServiceTest, TablesAboveMaxTableBytesAreRefused) {
  ServerOptions options = testing::test_server_options();
  options.max_table_bytes = 1000;
  start(options);
  const grpc::Status status = client_->create(table_config("big", 100, 4));  // 1600 bytes
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(contains(status.error_message(), "max_table_bytes")) << status.error_message();
  EXPECT_TRUE(client_->create(table_config("small", 50, 4)).ok());  // 800 bytes
}

TEST_F(ServiceTest, LookupReturnsTheInitialRowsWhateverTheServerCount) {
  const TableConfig config = table_config("emb", 11, 3);
  ASSERT_TRUE(client_->create(config, 1, 2).ok());  // holds the odd ids
  const at::Tensor ids = ids_tensor({9, 1, 3, 1});
  const at::Tensor rows = client_->rows("emb", ids);
  EXPECT_EQ(rows.sizes(), (std::vector<int64_t>{4, 3}));
  EXPECT_TRUE(at::equal(rows, initial_rows(config, ids)));
}

TEST_F(ServiceTest, AsyncPushesApplyOnArrivalWithDuplicatesSummed) {
  const TableConfig config = table_config();  // SGD lr 0.5, 1 trainer
  ASSERT_TRUE(client_->create(config).ok());
  const at::Tensor ids = ids_tensor({1, 3, 1});
  const at::Tensor grads = at::arange(12, at::kFloat).reshape({3, 4});
  ASSERT_TRUE(client_->push("emb", 0, 0, ids, grads).ok());

  const at::Tensor start = initial_rows(config, ids_tensor({1, 3, 5}));
  const at::Tensor expected =
      at::stack({start[0] - 0.5 * (grads[0] + grads[2]), start[1] - 0.5 * grads[1], start[2]});
  EXPECT_TRUE(at::allclose(client_->rows("emb", ids_tensor({1, 3, 5})), expected));
}

TEST_F(ServiceTest, SyncStepOfTwoTrainersAppliesTheMeanOnce) {
  const TableConfig config = table_config("emb", 10, 4, UpdateMode::kSync, 2);
  v1::CreateTableResponse created;
  ASSERT_TRUE(client_->create(config, 0, 1, &created).ok());
  const int64_t step = created.step();
  const at::Tensor ids = ids_tensor({2, 5});
  const at::Tensor start = client_->rows("emb", ids);
  const at::Tensor grad0 = at::full({1, 4}, 2.0f);
  const at::Tensor grad1 = at::full({2, 4}, 4.0f);

  std::vector<grpc::Status> statuses(2);
  std::vector<int64_t> steps(2, -1);
  std::vector<std::thread> trainers;
  for (int trainer = 0; trainer < 2; ++trainer) {
    trainers.emplace_back([&, trainer] {
      ServerClient client(server_->address());
      const at::Tensor trainer_ids = trainer == 0 ? ids_tensor({2}) : ids_tensor({2, 5});
      statuses[trainer] =
          client.push("emb", trainer, step, trainer_ids, trainer == 0 ? grad0 : grad1);
      if (!statuses[trainer].ok()) return;
      if (trainer == 0) {
        // Trainer 1 may not have finished: nothing is applied before both did.
        EXPECT_TRUE(at::equal(client.rows("emb", ids), start));
      }
      statuses[trainer] = client.step("emb", trainer, step, 20s, &steps[trainer]);
    });
  }
  for (auto& thread : trainers) thread.join();
  for (int trainer = 0; trainer < 2; ++trainer) {
    EXPECT_TRUE(statuses[trainer].ok()) << trainer << ": " << statuses[trainer].error_message();
    EXPECT_EQ(steps[trainer], step + 1);
  }
  // mean over 2 trainers: id 2 gets (2 + 4) / 2 = 3, id 5 gets 4 / 2 = 2; lr 0.5.
  const at::Tensor expected = at::stack({start[0] - 1.5f, start[1] - 1.0f});
  EXPECT_TRUE(at::allclose(client_->rows("emb", ids), expected));
}

TEST_F(ServiceTest, ABatchRunsItsPushesThenItsLookupsAsTheirOwnCallsWould) {
  const TableConfig config = table_config();  // async, SGD lr 0.5
  ASSERT_TRUE(client_->create(config).ok());
  ASSERT_TRUE(client_->create(table_config("other", 6, 2)).ok());
  const at::Tensor start = client_->rows("emb", ids_tensor({1, 3}));
  const at::Tensor other = client_->rows("other", ids_tensor({0, 5}));

  v1::BatchRequest request;
  v1::PushRequest* push = request.add_pushes();
  push->set_table("emb");
  rpc::encode_tensor(ids_tensor({1}), push->mutable_ids());
  rpc::encode_tensor(at::full({1, 4}, 2.0f), push->mutable_grads());
  for (const auto& [table, ids] :
       {std::pair{"emb", ids_tensor({3, 1})}, std::pair{"other", ids_tensor({5, 0})}}) {
    v1::LookupRequest* lookup = request.add_lookups();
    lookup->set_table(table);
    rpc::encode_tensor(ids, lookup->mutable_ids());
  }
  v1::BatchResponse response;
  const grpc::Status status = client_->stub().Batch(client_->context().get(), request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.lookups_size(), 2);
  EXPECT_EQ(response.steps_size(), 0);
  // The push is applied before the lookups read the rows.
  const at::Tensor emb = rpc::decode_tensor(response.lookups(0).rows(), "rows");
  EXPECT_TRUE(at::allclose(emb, at::stack({start[1], start[0] - 1.0f})));
  const at::Tensor got = rpc::decode_tensor(response.lookups(1).rows(), "rows");
  EXPECT_TRUE(at::equal(got, at::stack({other[1], other[0]})));
}

TEST_F(ServiceTest, ABatchStopsAtItsFirstFailingPartAndNamesIt) {
  ASSERT_TRUE(client_->create(table_config()).ok());
  const at::Tensor before = client_->rows("emb", ids_tensor({1, 2}));
  v1::BatchRequest request;
  for (const char* table : {"emb", "missing", "emb"}) {
    v1::PushRequest* push = request.add_pushes();
    push->set_table(table);
    rpc::encode_tensor(ids_tensor({table == std::string("emb") ? 1 : 2}), push->mutable_ids());
    rpc::encode_tensor(at::ones({1, 4}), push->mutable_grads());
  }
  v1::LookupRequest* lookup = request.add_lookups();
  lookup->set_table("emb");
  rpc::encode_tensor(ids_tensor({1}), lookup->mutable_ids());
  v1::BatchResponse response;
  const grpc::Status status = client_->stub().Batch(client_->context().get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(contains(status.error_message(), "push 2 of 3 (table 'missing') of a batch"))
      << status.error_message();
  EXPECT_TRUE(contains(status.error_message(), "does not exist")) << status.error_message();
  // The first push stays applied (lr 0.5 x 1); the third never ran.
  const at::Tensor after = client_->rows("emb", ids_tensor({1, 2}));
  EXPECT_TRUE(at::allclose(after, at::stack({before[0] - 0.5f, before[1]})));
  EXPECT_EQ(response.lookups_size(), 0);
}

TEST_F(ServiceTest, SyncStepWithAMissingTrainerFailsNamingItWithinTheDeadline) {
  const TableConfig config = table_config("emb", 10, 4, UpdateMode::kSync, 2);
  ASSERT_TRUE(client_->create(config).ok());
  const at::Tensor ids = ids_tensor({0, 1});
  const at::Tensor start = client_->rows("emb", ids);
  ASSERT_TRUE(client_->push("emb", 0, 0, ids, at::ones({2, 4})).ok());
  const grpc::Status status = client_->step("emb", 0, 0, 1500ms);
  ASSERT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  // The server's answer (not the client's own deadline) arrived: it names the missing trainer.
  EXPECT_TRUE(contains(status.error_message(),
                       "step 0 of table 'emb': trainer(s) 1 of 2 did not "
                       "finish it within"))
      << status.error_message();
  EXPECT_TRUE(at::equal(client_->rows("emb", ids), start));
}

TEST_F(ServiceTest, SyncStepsOfMoreTrainersThanTensorThreadsAllComplete) {
  ServerOptions options = testing::test_server_options();
  options.threads = 1;
  start(options);
  constexpr int kTrainers = 4;
  ASSERT_TRUE(client_->create(table_config("emb", 10, 4, UpdateMode::kSync, kTrainers)).ok());
  std::vector<grpc::Status> statuses(kTrainers);
  std::vector<std::thread> trainers;
  for (int trainer = 0; trainer < kTrainers; ++trainer) {
    trainers.emplace_back([&, trainer] {
      ServerClient client(server_->address());
      for (int64_t step = 0; step < 3 && statuses[trainer].ok(); ++step) {
        statuses[trainer] =
            client.push("emb", trainer, step, ids_tensor({trainer}), at::ones({1, 4}));
        if (statuses[trainer].ok()) statuses[trainer] = client.step("emb", trainer, step, 20s);
      }
    });
  }
  for (auto& thread : trainers) thread.join();
  for (int trainer = 0; trainer < kTrainers; ++trainer) {
    EXPECT_TRUE(statuses[trainer].ok()) << trainer << ": " << statuses[trainer].error_message();
  }
}

TEST_F(ServiceTest, ShutdownDoesNotWaitForAStepThatCannotComplete) {
  ASSERT_TRUE(client_->create(table_config("emb", 10, 4, UpdateMode::kSync, 2)).ok());
  grpc::Status status;
  std::thread trainer([&] { status = client_->step("emb", 0, 0, 60s); });
  std::this_thread::sleep_for(300ms);  // let the call reach the server and wait there
  const auto start = std::chrono::steady_clock::now();
  server_->shutdown(200ms);
  const auto took = std::chrono::steady_clock::now() - start;
  trainer.join();
  server_.reset();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  // Far below the step's 60 s deadline, which an uninterruptible wait would have reached.
  EXPECT_LT(took, 30s);
}

TEST_F(ServiceTest, MalformedRequestsAreRejectedAndLeaveTheTableUnchanged) {
  const TableConfig config = table_config("emb", 10, 4);  // async: a bad push would show at once
  ASSERT_TRUE(client_->create(config, 0, 2).ok());        // holds the even ids
  const at::Tensor mine = ids_tensor({0, 2, 4, 6, 8});
  const at::Tensor before = client_->rows("emb", mine);

  // Each request as a Batch's one part.
  const auto lookup_with = [&](v1::Tensor ids) {
    v1::LookupRequest request;
    request.set_table("emb");
    *request.mutable_ids() = std::move(ids);
    return client_->lookup(request, nullptr);
  };
  const auto push_with = [&](v1::Tensor ids, v1::Tensor grads, const std::string& table = "emb") {
    v1::PushRequest request;
    request.set_table(table);
    *request.mutable_ids() = std::move(ids);
    *request.mutable_grads() = std::move(grads);
    return client_->push(request);
  };
  const v1::Tensor good_ids = rpc::encode_tensor(ids_tensor({0, 2}));
  const v1::Tensor good_grads = rpc::encode_tensor(at::ones({2, 4}));

  v1::Tensor float_ids = rpc::encode_tensor(at::zeros({2}));
  v1::Tensor short_ids = good_ids;
  short_ids.mutable_data()->resize(12);
  v1::Tensor negative_dim = good_ids;
  negative_dim.set_shape(0, -2);
  v1::Tensor wide_grads = rpc::encode_tensor(at::ones({2, 5}));
  v1::Tensor tall_grads = rpc::encode_tensor(at::ones({3, 4}));
  v1::Tensor flat_grads = rpc::encode_tensor(at::ones({8}));
  v1::Tensor long_grads = rpc::encode_tensor(at::ones({2, 4}, at::kLong));

  const std::vector<std::pair<std::string, grpc::Status>> invalid = {
      {"lookup float ids", lookup_with(float_ids)},
      {"lookup short bytes", lookup_with(short_ids)},
      {"lookup negative dim", lookup_with(negative_dim)},
      {"lookup id out of range", lookup_with(rpc::encode_tensor(ids_tensor({0, 10})))},
      {"lookup negative id", lookup_with(rpc::encode_tensor(ids_tensor({-2})))},
      {"lookup id of another shard", lookup_with(rpc::encode_tensor(ids_tensor({2, 3})))},
      {"push float ids", push_with(float_ids, good_grads)},
      {"push short bytes", push_with(short_ids, good_grads)},
      {"push id out of range", push_with(rpc::encode_tensor(ids_tensor({0, 12})), good_grads)},
      {"push id of another shard", push_with(rpc::encode_tensor(ids_tensor({0, 1})), good_grads)},
      {"push grads too wide", push_with(good_ids, wide_grads)},
      {"push grads too many rows", push_with(good_ids, tall_grads)},
      {"push grads 1-D", push_with(good_ids, flat_grads)},
      {"push grads int64", push_with(good_ids, long_grads)},
  };
  for (const auto& [what, status] : invalid) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << what << ": " << status.error_message();
  }
  EXPECT_TRUE(contains(invalid[0].second.error_message(), "lookup.ids"));

  at::Tensor rows;
  EXPECT_EQ(client_->lookup("nope", mine, &rows).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(push_with(good_ids, good_grads, "nope").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(client_->step("nope", 0, 0).error_code(), grpc::StatusCode::NOT_FOUND);

  EXPECT_TRUE(at::equal(client_->rows("emb", mine), before));
  // And the server still works.
  EXPECT_TRUE(push_with(good_ids, good_grads).ok());
  EXPECT_FALSE(at::equal(client_->rows("emb", mine), before));
}

TEST_F(ServiceTest, OversizeRequestsAreRejectedWithTheServerStillServing) {
  ServerOptions options = testing::test_server_options();
  options.max_message_bytes = 64 << 10;
  options.max_request_bytes = 64 << 10;
  start(options);
  const TableConfig config = table_config("emb", 2000, 64);
  ASSERT_TRUE(client_->create(config).ok());
  const at::Tensor probe = ids_tensor({0, 1, 1999});
  const at::Tensor before = client_->rows("emb", probe);

  // 1000 x 64 float gradients = 256 KiB, four times the server's limit.
  const grpc::Status push =
      client_->push("emb", 0, 0, at::arange(1000, at::kLong), at::ones({1000, 64}));
  EXPECT_EQ(push.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << push.error_message();
  // An answer above the limit is refused before it is built.
  at::Tensor rows;
  const grpc::Status lookup = client_->lookup("emb", at::arange(2000, at::kLong), &rows);
  EXPECT_EQ(lookup.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << lookup.error_message();

  EXPECT_TRUE(at::equal(client_->rows("emb", probe), before));
}

TEST_F(ServiceTest, RequestsAboveGrpcsDefaultAreNotReadWithOrWithoutTheToken) {
  // The default request limit is gRPC's 4 MiB: what a caller can make the server read before
  // its token is checked. A 5 MiB push is refused whoever sends it.
  const TableConfig config = table_config("emb", 40000, 32);
  ASSERT_TRUE(client_->create(config).ok());
  const at::Tensor ids = at::arange(40000, at::kLong);  // 40000 x (8 + 32 x 4) bytes = 5.2 MB
  const at::Tensor grads = at::ones({40000, 32});
  EXPECT_EQ(client_->push("emb", 0, 0, ids, grads).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  testing::ServerClient stranger(server_->address(), "not-the-token");
  EXPECT_EQ(stranger.push("emb", 0, 0, ids, grads).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  // Below the limit the token decides.
  EXPECT_EQ(stranger.push("emb", 0, 0, ids_tensor({1}), at::ones({1, 32})).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(ServiceTest, CheckpointWithoutADirectoryIsAFailedPrecondition) {
  const grpc::Status status = client_->checkpoint();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(contains(status.error_message(), "--checkpoint-dir")) << status.error_message();
}

TEST(StartServer, RejectsBadOptions) {
  ServerOptions options = testing::test_server_options();
  options.token = "";
  EXPECT_THROW(start_server(options), ConfigError);
  options = testing::test_server_options();
  options.listen = "127.0.0.1";
  EXPECT_THROW(start_server(options), ConfigError);
  options.listen = "127.0.0.1:99999";
  EXPECT_THROW(start_server(options), ConfigError);
  options = testing::test_server_options();
  options.threads = 0;
  EXPECT_THROW(start_server(options), ConfigError);
  options = testing::test_server_options();
  options.tls_cert_file = "/nonexistent/cert.pem";
  EXPECT_THROW(start_server(options), ConfigError);
}

TEST(StartServer, AnAddressInUseIsAConfigError) {
  const std::unique_ptr<Server> first = start_server(testing::test_server_options());
  ServerOptions options = testing::test_server_options();
  options.listen = first->address();
  EXPECT_THROW(start_server(options), ConfigError);
}

}  // namespace
}  // namespace gradwire::ps
