// Checkpoints through the service: the Checkpoint call, periodic and shutdown checkpoints, a new
// server continuing from the files, servers sharing one directory, and damaged files refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "../launch/test_support.h"
#include "gradwire/common/error.h"
#include "gradwire/ps/server.h"
#include "ps/core/checkpoint.h"
#include "ps/core/table_shard.h"
#include "ps/server/server_checkpoints.h"
#include "server_test_support.h"

namespace gradwire::ps {
namespace {

using namespace std::chrono_literals;
using launch::testing::TempDir;
using testing::ids_tensor;
using testing::ServerClient;
using testing::table_config;

ServerOptions options_with_dir(const std::string& dir, int64_t every_steps = 0) {
  ServerOptions options = testing::test_server_options();
  options.checkpoint_dir = dir;
  options.checkpoint_every_steps = every_steps;
  return options;
}

TableConfig adagrad_config() {
  TableConfig config = table_config("emb", 12, 4, UpdateMode::kSync, 1);
  config.optimizer.kind = OptimizerKind::kAdagrad;
  config.optimizer.lr = 0.1;
  config.optimizer.eps = 1e-10;
  return config;
}

// Runs `steps` sync steps of trainer 0 from step `first`, each pushing ones on `ids`.
void train(ServerClient& client, const at::Tensor& ids, int64_t first, int steps) {
  for (int64_t step = first; step < first + steps; ++step) {
    ASSERT_TRUE(client.push("emb", 0, step, ids, at::ones({ids.size(0), 4})).ok());
    int64_t after = -1;
    ASSERT_TRUE(client.step("emb", 0, step, 10s, &after).ok());
    ASSERT_EQ(after, step + 1);
  }
}

TEST(ServerCheckpoint, ANewServerContinuesFromTheCheckpointCall) {
  TempDir dir;
  const TableConfig config = adagrad_config();
  const at::Tensor all = at::arange(12, at::kLong);
  at::Tensor trained;
  {
    auto server = start_server(options_with_dir(dir.path()));
    ServerClient client(server->address());
    ASSERT_TRUE(client.create(config).ok());
    train(client, ids_tensor({1, 5, 5}), 0, 3);
    trained = client.rows("emb", all);
    std::vector<std::string> files;
    ASSERT_TRUE(client.checkpoint(&files).ok());
    ASSERT_EQ(files.size(), 1u);
    EXPECT_TRUE(std::filesystem::exists(files[0])) << files[0];
    EXPECT_EQ(std::filesystem::path(files[0]).filename().string(),
              generation_file_name("emb", 0, 1, 3));
    server->shutdown(1s);
  }
  auto server = start_server(options_with_dir(dir.path()));
  ServerClient client(server->address());
  // Restored before any CreateTable ...
  EXPECT_TRUE(at::equal(client.rows("emb", all), trained));
  // ... and CreateTable with the same config keeps the rows and the step.
  v1::CreateTableResponse response;
  const grpc::Status created = client.create(config, 0, 1, &response);
  ASSERT_TRUE(created.ok()) << created.error_message();
  EXPECT_FALSE(response.created());
  EXPECT_EQ(response.step(), 3);
  EXPECT_TRUE(at::equal(client.rows("emb", all), trained));
  // Training goes on from step 3, optimizer state included.
  train(client, ids_tensor({1}), 3, 1);

  TableConfig other = config;
  other.optimizer.lr = 0.2;
  const grpc::Status status = client.create(other);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("lr"), std::string::npos) << status.error_message();
}

TEST(ServerCheckpoint, ShutdownWritesTheTablesAndPeriodicCheckpointsFollowSteps) {
  TempDir dir;
  const TableConfig config = adagrad_config();
  const auto file = [&](int64_t step) {
    return dir.path() + "/" + generation_file_name("emb", 0, 1, step);
  };
  const at::Tensor all = at::arange(12, at::kLong);
  at::Tensor trained;
  {
    auto server = start_server(options_with_dir(dir.path(), 2));
    ServerClient client(server->address());
    ASSERT_TRUE(client.create(config).ok());
    train(client, ids_tensor({2}), 0, 1);
    EXPECT_TRUE(list_checkpoints(dir.path()).empty());
    train(client, ids_tensor({2}), 1, 1);
    ASSERT_TRUE(std::filesystem::exists(file(2)));
    EXPECT_EQ(read_checkpoint(file(2)).step, 2);
    train(client, ids_tensor({3}), 2, 1);
    EXPECT_EQ(list_checkpoints(dir.path()), std::vector<std::string>{file(2)});
    trained = client.rows("emb", all);
    server->shutdown(1s);
  }
  EXPECT_EQ(read_checkpoint(file(3)).step, 3);
  EXPECT_TRUE(std::filesystem::exists(file(2)));  // the two newest stay
  auto server = start_server(options_with_dir(dir.path(), 2));
  ServerClient client(server->address());
  EXPECT_TRUE(at::equal(client.rows("emb", all), trained));
}

TEST(ServerCheckpoint, ServersSharingADirectoryEachRestoreTheirOwnShard) {
  TempDir dir;
  const TableConfig config = adagrad_config();
  std::vector<at::Tensor> trained(2);
  const std::vector<at::Tensor> ids = {ids_tensor({0, 2, 10}), ids_tensor({1, 3, 11})};
  {
    std::vector<std::unique_ptr<Server>> servers;
    for (int index = 0; index < 2; ++index) {
      servers.push_back(start_server(options_with_dir(dir.path())));
      ServerClient client(servers.back()->address());
      ASSERT_TRUE(client.create(config, index, 2).ok());
      train(client, ids[index], 0, 2);
      trained[index] = client.rows("emb", ids[index]);
    }
    for (auto& server : servers) server->shutdown(1s);
  }
  for (int index : {1, 0}) {
    auto server = start_server(options_with_dir(dir.path()));
    ServerClient client(server->address());
    v1::CreateTableResponse response;
    const grpc::Status created = client.create(config, index, 2, &response);
    ASSERT_TRUE(created.ok()) << created.error_message();
    EXPECT_EQ(response.step(), 2);
    EXPECT_TRUE(at::equal(client.rows("emb", ids[index]), trained[index])) << index;
  }
}

TEST(ServerCheckpoint, ADamagedFileStopsTheServerFromStartingNamingIt) {
  TempDir dir;
  {
    auto server = start_server(options_with_dir(dir.path()));
    ServerClient client(server->address());
    ASSERT_TRUE(client.create(adagrad_config()).ok());
    ASSERT_TRUE(client.checkpoint().ok());
    server->shutdown(1s);
  }
  const std::string file = dir.path() + "/" + generation_file_name("emb", 0, 1, 0);
  {
    std::fstream stream(file, std::ios::in | std::ios::out | std::ios::binary);
    stream.seekg(0, std::ios::end);
    const std::streamoff size = stream.tellg();
    ASSERT_GT(size, 40);
    stream.seekp(size - 20);
    char byte = 0;
    stream.seekg(size - 20);
    stream.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    stream.seekp(size - 20);
    stream.write(&byte, 1);
  }
  try {
    start_server(options_with_dir(dir.path()));
    FAIL() << "a damaged checkpoint was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(generation_file_name("emb", 0, 1, 0)),
              std::string::npos)
        << error.what();
  }
}

// A restored table keeps the limits CreateTable checks (check_table_limits): a file above them
// stops the start with a ConfigError naming the file and the limit (issue 37, finding 7). Before,
// a file of 2^31 - 1 trainers was restored unchecked and the start failed with bad_alloc, and a
// table above max_table_bytes was served.
TEST(ServerCheckpoint, ARestoredTableAboveTheServersLimitsStopsTheStartNamingTheFile) {
  TempDir dir;
  const auto write = [&](const TableConfig& config, int32_t num_trainers) {
    ShardSnapshot snapshot = TableShard(config, 0, 1).snapshot();
    snapshot.config.num_trainers = num_trainers;
    const std::string file = dir.path() + "/" + generation_file_name(config.name, 0, 1, 0);
    write_checkpoint(file, snapshot);
    return file;
  };
  const auto refusal = [&](const ServerOptions& options) -> std::string {
    try {
      start_server(options);
    } catch (const ConfigError& error) {
      return error.what();
    }
    return "";
  };
  ServerOptions options = options_with_dir(dir.path());
  const std::string crowd =
      write(table_config("crowd", 4, 2, UpdateMode::kSync, 1), std::numeric_limits<int32_t>::max());
  std::string message = refusal(options);
  EXPECT_NE(message.find(crowd), std::string::npos) << message;
  EXPECT_NE(message.find("num_trainers 2147483647, above this server's max_trainers 1024"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("--max-trainers"), std::string::npos) << message;
  EXPECT_TRUE(std::filesystem::exists(crowd));  // kept for a server with limits that hold it
  std::filesystem::remove(crowd);

  // 64 x 8 float32 rows and Adagrad's state: 4096 bytes.
  TableConfig wide_config = adagrad_config();
  wide_config.name = "wide";
  wide_config.num_rows = 64;
  wide_config.dim = 8;
  const std::string wide = write(wide_config, 1);
  options.max_table_bytes = 4095;
  message = refusal(options);
  EXPECT_NE(message.find(wide), std::string::npos) << message;
  EXPECT_NE(message.find("needs 4096 bytes on server 0 of 1, above this server's "
                         "max_table_bytes 4095"),
            std::string::npos)
      << message;
  // Within the limits, the table is served.
  options.max_table_bytes = 4096;
  auto server = start_server(options);
  ServerClient client(server->address());
  EXPECT_EQ(client.rows("wide", at::arange(64, at::kLong)).size(0), 64);
}

TEST(ServerCheckpoint, KeepsTheNewestGenerationsAndResumesFromOne) {
  TempDir dir;
  const TableConfig config = adagrad_config();
  const at::Tensor all = at::arange(12, at::kLong);
  const auto file = [&](int64_t step) {
    return dir.path() + "/" + generation_file_name("emb", 0, 1, step);
  };
  auto server = start_server(options_with_dir(dir.path(), 1));
  ServerClient client(server->address());
  ASSERT_TRUE(client.create(config).ok());
  train(client, ids_tensor({4}), 0, 2);
  const at::Tensor at_two = client.rows("emb", all);
  train(client, ids_tensor({4, 6}), 2, 1);
  EXPECT_EQ(list_checkpoints(dir.path()), (std::vector<std::string>{file(2), file(3)}));
  // A restarted group (attempt 1) resumes at step 2: the table is rewound, bit for bit, and the
  // file of the abandoned step 3 goes.
  int64_t step = -1;
  grpc::Status status = client.resume("emb", 0, 2, 1, &step);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(step, 2);
  EXPECT_TRUE(at::equal(client.rows("emb", all), at_two));
  EXPECT_EQ(list_checkpoints(dir.path()), std::vector<std::string>{file(2)});
  // Resuming where the table is changes nothing; a step without a file is refused, naming what
  // the server holds.
  ASSERT_TRUE(client.resume("emb", 0, 2, 1).ok());
  status = client.resume("emb", 0, 1, 1);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(status.error_message().find("no checkpoint of step 1 (it holds steps 2 in"),
            std::string::npos)
      << status.error_message();
  // The old attempt's calls are refused.
  EXPECT_EQ(client.resume("emb", 0, 2, 0).error_code(), grpc::StatusCode::ABORTED);
  server->shutdown(1s);
}

TEST(ServerCheckpoint, ARestoredShardWaitsForACreateTableWithItsConfig) {
  TempDir dir;
  const TableConfig config = adagrad_config();
  {
    std::vector<std::unique_ptr<Server>> servers;
    for (int index = 0; index < 2; ++index) {
      servers.push_back(start_server(options_with_dir(dir.path())));
      ServerClient client(servers.back()->address());
      ASSERT_TRUE(client.create(config, index, 2).ok());
      train(client, ids_tensor({index + 2}), 0, 2);
    }
    for (auto& server : servers) server->shutdown(1s);
  }
  auto server = start_server(options_with_dir(dir.path()));
  ServerClient client(server->address());
  TableConfig other = config;
  other.optimizer.lr = 0.2;
  const grpc::Status refused = client.create(other, 0, 2);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("the checkpoint is kept"), std::string::npos)
      << refused.error_message();
  // Eight trainers creating the table at once all get the restored shard.
  std::vector<std::thread> creators;
  std::vector<grpc::Status> statuses(8);
  std::vector<v1::CreateTableResponse> responses(8);
  for (int i = 0; i < 8; ++i) {
    creators.emplace_back([&, i] {
      ServerClient own(server->address());
      statuses[i] = own.create(config, 0, 2, &responses[i]);
    });
  }
  for (auto& thread : creators) thread.join();
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(statuses[i].ok()) << statuses[i].error_message();
    EXPECT_FALSE(responses[i].created()) << i;
    EXPECT_EQ(responses[i].step(), 2) << i;
  }
  server->shutdown(1s);
}

TEST(ServerCheckpoint, AWriteOfOneTableDoesNotStallAnother) {
  // Table "big" (256 MiB) is being written; a periodic checkpoint of table "small" completes
  // meanwhile: the writes are serialised per table, not by one lock for all.
  TempDir dir;
  ServerCheckpoints checkpoints(dir.path(), 1);
  TableConfig big = table_config("big", 1 << 16, 1024, UpdateMode::kSync, 1);
  big.initializer.kind = InitializerKind::kZeros;
  const auto big_shard = std::make_shared<TableShard>(big, 0, 1);
  TableShard small(table_config("small", 4, 2, UpdateMode::kSync, 1), 0, 1);
  small.push(0, 0, ids_tensor({1}), at::ones({1, 2}));
  ASSERT_TRUE(small.finish_step(0, 0, std::chrono::steady_clock::now()).applied);

  const auto big_temp_exists = [&] {
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      if (entry.path().filename().string().rfind(".big.", 0) == 0) return true;
    }
    return false;
  };
  std::thread writer([&] { checkpoints.write_all({big_shard}); });
  ASSERT_TRUE(launch::testing::wait_until(big_temp_exists, 60s));
  checkpoints.after_update(small);  // writes "small" at step 1
  const bool big_still_writing = big_temp_exists();
  writer.join();
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/" + generation_file_name("small", 0, 1, 1)));
  EXPECT_TRUE(big_still_writing) << "the small table's write waited for the big one's";
}

}  // namespace
}  // namespace gradwire::ps
