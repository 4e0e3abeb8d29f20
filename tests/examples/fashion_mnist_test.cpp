// examples/fashion_mnist as real 2-process jobs under run_workers (gradwire-run's engine), on a
// slice of Fashion-MNIST written to RecordIO here (4096 training images in 32 chunks, 1000 test
// images): a short run learns (test accuracy well above the 10% of chance, equal parameters on
// both ranks), and a run whose last rank is SIGKILLed mid-epoch, restarted by max_restarts and
// resumed from its newest checkpoint, ends with bit-identical parameters to an uninterrupted run
// (static partition, fixed seed, one thread per worker, the default cosine learning-rate schedule
// changing the rate every step), and a resumed job keeps the checkpoint's schedule whatever its
// flags say. Skipped when the dataset is not
// installed (apt-get install dataset-fashion-mnist).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <regex>
#include <string>

#include "example_job.h"
#include "gradwire/data/image_records.h"
#include "gradwire/data/recordio_writer.h"

namespace {

namespace fs = std::filesystem;
namespace data = gradwire::data;

const std::string kDataset = "/usr/share/datasets/fashion-mnist";

// Writes images [first, first + count) of an IDX pair to `files` RecordIO files under `prefix`,
// `per_chunk` records per chunk.
void write_slice(const std::string& split, const std::string& prefix, size_t count, int files,
                 uint32_t per_chunk) {
  const data::IdxArray images = data::parse_idx(
      data::read_file_maybe_gzip(kDataset + "/" + split + "-images-idx3-ubyte.gz"), split);
  const data::IdxArray labels = data::parse_idx(
      data::read_file_maybe_gzip(kDataset + "/" + split + "-labels-idx1-ubyte.gz"), split);
  const size_t pixels = images.item_size();
  const size_t per_file = count / files;
  for (int file = 0; file < files; ++file) {
    data::RecordWriterOptions options;
    options.records_per_chunk = per_chunk;
    data::RecordWriter writer(prefix + "-" + std::to_string(file) + ".gwrio", options);
    for (size_t i = file * per_file; i < (file + 1) * per_file; ++i) {
      writer.write(
          data::encode_image_record(static_cast<uint8_t>(labels.data[i]), 28, 28,
                                    std::string_view(images.data).substr(i * pixels, pixels)));
    }
    writer.close();
  }
}

class FashionMnistExample : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(kDataset + "/train-images-idx3-ubyte.gz")) return;
    dir_ = fs::temp_directory_path() / ("gradwire_fashion_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "data");
    write_slice("train", (dir_ / "data" / "train").string(), 4096, 2, 128);
    write_slice("t10k", (dir_ / "data" / "test").string(), 1000, 1, 125);
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    if (dir_.empty()) GTEST_SKIP() << kDataset << " is not installed";
  }

  // Options for a 2-rank run of the example with `args` after --data.
  static gradwire::launch::LaunchOptions job(const std::vector<std::string>& args) {
    gradwire::launch::LaunchOptions options;
    options.nproc_per_node = 2;
    options.command = {FASHION_MNIST_PATH, "--data", (dir_ / "data").string()};
    options.command.insert(options.command.end(), args.begin(), args.end());
    options.grace_period = std::chrono::milliseconds(3000);
    return options;
  }
  static std::map<std::string, std::string> checksums(const std::string& out) {
    return gradwire::testing::values_by_rank(out, R"(rank (\d) parameter checksum (\S+))");
  }

  static inline fs::path dir_;
};

TEST_F(FashionMnistExample, ShortRunLearnsWellAboveChance) {
  const auto [result, out] = gradwire::testing::run_example(
      job({"--epochs", "1", "--limit", "2048", "--batch-size", "64", "--lr", "0.05"}));
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << out;

  std::smatch match;
  ASSERT_TRUE(std::regex_search(out, match, std::regex(R"(epoch 1 test accuracy (\d+\.\d\d)%)")))
      << out;
  EXPECT_GT(std::stod(match[1]), 50.0) << out;  // chance is 10%
  EXPECT_THAT(out, ::testing::HasSubstr("[rank 0] epoch 1 step 32/32 loss"));
  const auto sums = checksums(out);
  ASSERT_EQ(sums.size(), 2u) << out;
  EXPECT_EQ(sums.at("0"), sums.at("1"));
}

TEST_F(FashionMnistExample, KilledAndResumedRunEqualsUninterruptedRun) {
  // 16 steps per epoch; checkpoints every 5 steps; the kill comes before step 23 (epoch 2, step
  // 7), so the resumed run continues from step 20, mid-epoch.
  const std::vector<std::string> args = {
      "--epochs",           "2", "--limit", "1024", "--seed", "7", "--partition", "static",
      "--checkpoint-every", "5"};
  auto with = [&](const std::string& checkpoints, std::vector<std::string> extra) {
    std::vector<std::string> all = args;
    all.push_back("--checkpoint-dir");
    all.push_back((dir_ / checkpoints).string());
    all.insert(all.end(), extra.begin(), extra.end());
    return job(all);
  };

  const auto [plain, plain_out] = gradwire::testing::run_example(with("plain", {}));
  ASSERT_EQ(plain.exit_code(), 0) << plain.summary() << plain_out;

  gradwire::launch::LaunchOptions crashing = with("crashing", {"--resume"});
  crashing.max_restarts = 1;
  crashing.extra_env["GRADWIRE_TEST_KILL_AT_STEP"] = "23";
  const auto [resumed, resumed_out] = gradwire::testing::run_example(crashing);
  ASSERT_EQ(resumed.exit_code(), 0) << resumed.summary() << resumed_out;
  ASSERT_EQ(resumed.restarted_attempts.size(), 1u) << resumed_out;
  const auto& first = resumed.restarted_attempts[0];
  ASSERT_EQ(first.first_failed_local_rank, 1);
  EXPECT_EQ(first.workers[1].signal, SIGKILL);
  EXPECT_THAT(resumed_out, ::testing::HasSubstr("no complete checkpoint"));
  EXPECT_THAT(resumed_out, ::testing::HasSubstr("step-0000000020: epoch 2 step 4"));

  const auto expected = checksums(plain_out);
  const auto actual = checksums(resumed_out);
  ASSERT_EQ(expected.size(), 2u) << plain_out;
  ASSERT_EQ(actual.size(), 2u) << resumed_out;
  EXPECT_EQ(actual.at("0"), expected.at("0")) << plain_out << resumed_out;
  EXPECT_EQ(actual.at("1"), expected.at("1"));
  EXPECT_EQ(expected.at("0"), expected.at("1"));
}

TEST_F(FashionMnistExample, ResumedRunKeepsTheCheckpointsSchedule) {
  // One epoch of 16 steps: cosine from 0.05 to 0 over those 16 steps. Resumed with 2 epochs and
  // --lr-schedule constant, the job continues the saved cosine schedule, which stays at 0 past
  // its end: epoch 2 leaves the parameters as they were.
  const std::string checkpoints = (dir_ / "schedule").string();
  const std::vector<std::string> common = {"--limit",          "1024",     "--seed", "3",
                                           "--checkpoint-dir", checkpoints};
  std::vector<std::string> first_args = {"--epochs", "1"};
  first_args.insert(first_args.end(), common.begin(), common.end());
  const auto [first, first_out] = gradwire::testing::run_example(job(first_args));
  ASSERT_EQ(first.exit_code(), 0) << first.summary() << first_out;
  EXPECT_THAT(first_out, ::testing::HasSubstr("cosine lr 0.05 to 0 over 16 steps"));

  std::vector<std::string> second_args = {"--epochs", "2", "--lr-schedule", "constant", "--resume"};
  second_args.insert(second_args.end(), common.begin(), common.end());
  const auto [second, second_out] = gradwire::testing::run_example(job(second_args));
  ASSERT_EQ(second.exit_code(), 0) << second.summary() << second_out;
  EXPECT_THAT(second_out, ::testing::HasSubstr("continuing the checkpoint's schedule (cosine lr "
                                               "0.05 to 0 over 16 steps) instead of the flags' "
                                               "(constant lr 0.05)"));
  EXPECT_THAT(second_out, ::testing::HasSubstr("epoch 2 test accuracy"));

  const auto before = checksums(first_out);
  const auto after = checksums(second_out);
  ASSERT_EQ(before.size(), 2u) << first_out;
  ASSERT_EQ(after.size(), 2u) << second_out;
  EXPECT_EQ(after.at("0"), before.at("0")) << first_out << second_out;
  EXPECT_EQ(after.at("1"), before.at("1"));
}

TEST_F(FashionMnistExample, RejectsAnUnknownSchedule) {
  const auto [result, out] = gradwire::testing::run_example(job({"--lr-schedule", "linear"}));
  EXPECT_EQ(result.exit_code(), 2) << result.summary() << out;
}

}  // namespace
