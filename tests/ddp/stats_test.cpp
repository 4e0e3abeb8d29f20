// DdpStats: iteration count, timings present, the bucket layout (names and bytes) and
// to_string; reset_stats starts the averages over.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <sstream>

#include "gradwire/ddp/ddp.h"
#include "reference_training.h"
#include "test_models.h"

namespace gradwire::ddp::testing {
namespace {

constexpr int kWorld = 2;

struct RankStats {
  DdpStats after_three;
  DdpStats after_reset;
  DdpStats after_one_more;
  DdpStats after_no_sync;  // one no_sync forward+backward, then one synchronised
  std::map<std::string, size_t> parameter_bytes;
};

std::vector<RankStats> collect(const DdpOptions& options) {
  torch::set_num_threads(1);
  auto batches = make_batches(6, 4 * kWorld, {16}, 4, 43);
  auto replicas = make_replicas(kWorld, [] {
    return Mlp(std::vector<int64_t>{16, 16, 16, 16, 4});
  });
  std::vector<RankStats> out(kWorld);
  gradwire::testing::run_ranks(
      kWorld,
      [&](int rank, World& w) {
        auto& model = replicas[rank];
        DistributedDataParallel<MlpImpl> ddp(model, w.communicator(), options);
        auto optimizer = make_sgd(*model);
        auto iterate = [&](const Batch& batch) {
          optimizer.zero_grad();
          auto output = ddp(rank_chunk(batch.input, rank, kWorld));
          torch::mse_loss(output, rank_chunk(batch.target, rank, kWorld)).backward();
          optimizer.step();
        };
        for (int i = 0; i < 3; ++i) iterate(batches[i]);
        out[rank].after_three = ddp.stats();
        ddp.reset_stats();
        out[rank].after_reset = ddp.stats();
        iterate(batches[3]);
        out[rank].after_one_more = ddp.stats();
        ddp.reset_stats();
        {
          auto guard = ddp.no_sync();
          torch::mse_loss(ddp(rank_chunk(batches[4].input, rank, kWorld)),
                          rank_chunk(batches[4].target, rank, kWorld))
              .backward();
        }
        iterate(batches[5]);
        out[rank].after_no_sync = ddp.stats();
        for (const auto& item : model->named_parameters()) {
          out[rank].parameter_bytes[item.key()] =
              item.value().numel() * item.value().element_size();
        }
      },
      std::chrono::seconds(20));
  return out;
}

void expect_layout_covers_parameters(const DdpStats& stats,
                                     const std::map<std::string, size_t>& parameter_bytes) {
  ASSERT_FALSE(stats.buckets.empty());
  std::map<std::string, int> seen;
  size_t total = 0;
  for (size_t b = 0; b < stats.buckets.size(); ++b) {
    const auto& bucket = stats.buckets[b];
    SCOPED_TRACE("bucket " + std::to_string(b));
    EXPECT_EQ(bucket.index, b);
    EXPECT_EQ(bucket.dtype, "Float");
    EXPECT_EQ(bucket.device, "cpu");
    EXPECT_FALSE(bucket.parameters.empty());
    size_t bytes = 0;
    for (const auto& name : bucket.parameters) {
      ++seen[name];
      auto it = parameter_bytes.find(name);
      ASSERT_NE(it, parameter_bytes.end()) << "unknown parameter name " << name;
      bytes += it->second;
    }
    EXPECT_EQ(bucket.bytes, bytes);
    total += bucket.bytes;
  }
  EXPECT_EQ(seen.size(), parameter_bytes.size());
  for (const auto& [name, count] : seen) EXPECT_EQ(count, 1) << name;
  size_t want_total = 0;
  for (const auto& [name, bytes] : parameter_bytes) want_total += bytes;
  EXPECT_EQ(total, want_total);
}

class Stats : public ::testing::TestWithParam<bool> {};  // tiny buckets

TEST_P(Stats, CountsIterationsDescribesBucketsAndResets) {
  DdpOptions options;
  if (GetParam()) {
    options.bucket_cap_mb = 0.001;
    options.first_bucket_mb = 0.001;
  }
  auto ranks = collect(options);
  for (int r = 0; r < kWorld; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& s = ranks[r];
    EXPECT_EQ(s.after_three.iterations, 3);
    EXPECT_GT(s.after_three.forward_s, 0);
    EXPECT_GE(s.after_three.backward_s, 0);
    EXPECT_GE(s.after_three.communication_s, 0);
    EXPECT_GE(s.after_three.overlapped_s, 0);
    EXPECT_GE(s.after_three.exposed_s, 0);
    EXPECT_EQ(s.after_three.comm_hook, "allreduce");
    if (GetParam()) EXPECT_GE(s.after_three.buckets.size(), 3u);
    expect_layout_covers_parameters(s.after_three, s.parameter_bytes);

    const auto text = to_string(s.after_three);
    std::istringstream lines(text);
    size_t line_count = 0;
    for (std::string line; std::getline(lines, line);) ++line_count;
    EXPECT_GT(line_count, s.after_three.buckets.size()) << text;
    for (const auto& bucket : s.after_three.buckets) {
      EXPECT_NE(text.find(bucket.parameters.front()), std::string::npos) << text;
      EXPECT_NE(text.find(std::to_string(bucket.bytes)), std::string::npos) << text;
    }

    EXPECT_EQ(s.after_reset.iterations, 0);
    EXPECT_EQ(s.after_reset.forward_s, 0);
    EXPECT_EQ(s.after_one_more.iterations, 1);
    EXPECT_GT(s.after_one_more.forward_s, 0);
    // The no_sync iteration is not a synchronised one.
    EXPECT_EQ(s.after_no_sync.iterations, 1);
  }
  // The layout is the same on every rank.
  ASSERT_EQ(ranks[0].after_three.buckets.size(), ranks[1].after_three.buckets.size());
  for (size_t b = 0; b < ranks[0].after_three.buckets.size(); ++b) {
    EXPECT_EQ(ranks[0].after_three.buckets[b].parameters,
              ranks[1].after_three.buckets[b].parameters)
        << "bucket " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Buckets, Stats, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "tiny" : "default"; });

}  // namespace
}  // namespace gradwire::ddp::testing
