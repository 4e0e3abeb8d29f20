// Dense parameter servers (gradwire/ps/dense.h): 2 trainers of a DenseModel in sync mode, each on
// its half of every global batch, end with the parameters one process gets by training the same
// module with torch::optim on the whole batch; both roles, SGD with momentum and Adam, 1 to 3
// servers, a layout with many blocks and messages (odd shapes, a parameter smaller than a row,
// one cut over every server). Also: the overlap of pushes with backward and of pulls with forward,
// shown by the recorded events; async training converging; a stopped server named. The sync
// cases run on both transports: shared memory (the default on one host) and bytes over gRPC,
// chosen by the client's option or by a trainer whose host identity differs from the servers'.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <tuple>

#include "client_test_support.h"
#include "gradwire/ps/dense.h"

namespace gradwire::ps {
namespace dense_equivalence_test {  // not anonymous: unity batches (docs/architecture.md "Tests")

using testing::client_options;
using testing::make_client;
using testing::run_trainers;
using testing::Servers;
using testing::Transport;

constexpr int kTrainers = 2;
constexpr int kSteps = 4;
constexpr int64_t kHalf = 6;  // examples per trainer and step

using Hook = std::function<void(const torch::nn::Module&)>;

// A head with a 3-D weight and a one-element scale.
struct HeadImpl : torch::nn::Module {
  HeadImpl() {
    weight = register_parameter("weight", torch::randn({5, 3, 4}) * 0.3);
    scale = register_parameter("scale", torch::ones({1}));
  }
  torch::Tensor forward(const torch::Tensor& y) { return y.matmul(weight.view({5, 12})) * scale; }
  torch::Tensor weight, scale;
};
TORCH_MODULE(Head);

// 13 -> 37 (481 + 37 values) -> 5 (no bias) -> 12, calling `hook` before each layer when set.
struct OddNetImpl : torch::nn::Module {
  OddNetImpl()
      : l1(register_module("l1", torch::nn::Linear(13, 37))),
        l2(register_module("l2", torch::nn::Linear(torch::nn::LinearOptions(37, 5).bias(false)))),
        head(register_module("head", Head())) {}
  torch::Tensor forward(const torch::Tensor& x) {
    if (hook) hook(*l1);
    torch::Tensor h = torch::relu(l1(x));
    if (hook) hook(*l2);
    torch::Tensor y = l2(h);
    if (hook) hook(*head);
    return head(y);
  }
  torch::nn::Linear l1;
  torch::nn::Linear l2;
  Head head;
  Hook hook;
};
TORCH_MODULE(OddNet);

// Small rows, blocks and messages, so that the 5 parameters make many of each.
DenseLayoutOptions small_layout() {
  DenseLayoutOptions layout;
  layout.min_block_elements = 50;
  layout.row_width = 16;
  layout.first_message_bytes = 3 * (16 * 4 + 8);
  layout.message_bytes = 10 * (16 * 4 + 8);
  return layout;
}

OptimizerConfig optimizer_of(OptimizerKind kind) {
  OptimizerConfig o;
  o.kind = kind;
  o.lr = kind == OptimizerKind::kSgd ? 0.05 : 0.01;
  if (kind == OptimizerKind::kSgd) o.momentum = 0.9;
  return o;
}

std::unique_ptr<torch::optim::Optimizer> local_optimizer(const OptimizerConfig& o,
                                                         std::vector<at::Tensor> params) {
  if (o.kind == OptimizerKind::kSgd) {
    return std::make_unique<torch::optim::SGD>(params,
                                               torch::optim::SGDOptions(o.lr).momentum(o.momentum));
  }
  return std::make_unique<torch::optim::Adam>(
      params, torch::optim::AdamOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps));
}

struct Data {
  std::vector<at::Tensor> x, y;  // per step: [2 x kHalf, ...]
};

Data make_data() {
  at::Generator generator = at::detail::createCPUGenerator(7);
  Data data;
  for (int s = 0; s < kSteps; ++s) {
    data.x.push_back(at::randn({kTrainers * kHalf, 13}, generator));
    data.y.push_back(at::randn({kTrainers * kHalf, 12}, generator));
  }
  return data;
}

std::vector<at::Tensor> values_of(const torch::nn::Module& module) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : module.parameters()) out.push_back(p.detach().clone());
  return out;
}

void copy_values(torch::nn::Module& module, const std::vector<at::Tensor>& values) {
  torch::NoGradGuard no_grad;
  const std::vector<at::Tensor> params = module.parameters();
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(values[i]);
}

// The reference's trained parameters and initial values, for `optimizer` on the whole batches.
struct Reference {
  std::vector<at::Tensor> initial, trained;
};
Reference train_reference(const OptimizerConfig& optimizer, const Data& data) {
  torch::manual_seed(3);
  OddNet reference;
  Reference out;
  out.initial = values_of(*reference);
  auto local = local_optimizer(optimizer, reference->parameters());
  for (int s = 0; s < kSteps; ++s) {
    local->zero_grad();
    torch::mse_loss(reference(data.x[s]), data.y[s]).backward();
    local->step();
  }
  out.trained = values_of(*reference);
  return out;
}

// How the trainers reach the servers (all in this process, so on one host).
// Each trainer's parameters after training on its halves of the batches; trainer 1 starts
// elsewhere (DenseModel gives it trainer 0's values). `stats` gets trainer 0's statistics. Fails
// the test when a trainer's servers do not share memory as `transport` says they do.
std::vector<std::vector<at::Tensor>> train_dense(const DenseOptions& options,
                                                 const std::vector<at::Tensor>& initial,
                                                 const Data& data, int num_servers,
                                                 DenseStats* stats = nullptr,
                                                 Transport transport = Transport::kShared) {
  Servers servers(num_servers, testing::one_process(transport));
  std::vector<std::vector<at::Tensor>> trained(kTrainers);
  std::vector<int> sharing(kTrainers, 0);
  run_trainers(kTrainers, [&](int t) {
    OddNet model;
    if (t == 0) copy_values(*model, initial);
    const std::shared_ptr<Client> connected = connect(
        testing::with_transport(client_options(servers.addresses(), t, kTrainers), transport));
    DenseModel dense(connected, model, options);
    for (int server = 0; server < num_servers; ++server) {
      sharing[t] += connected->shares_memory_with(server) ? 1 : 0;
      EXPECT_EQ(connected->transport(server), testing::transport_name(transport))
          << "trainer " << t << ", server " << server;
    }
    const auto in_place = [&] {  // servers whose rows this trainer reads in place
      int count = 0;
      for (int server = 0; server < num_servers; ++server) {
        count += connected->server_rows(options.table, server).defined() ? 1 : 0;
      }
      return count;
    };
    std::unique_ptr<torch::optim::Optimizer> own;
    if (options.role == DenseRole::kSum)
      own = local_optimizer(options.optimizer, model->parameters());
    for (int s = 0; s < kSteps; ++s) {
      if (own) own->zero_grad();
      const at::Tensor x = data.x[s].slice(0, t * kHalf, (t + 1) * kHalf);
      const at::Tensor y = data.y[s].slice(0, t * kHalf, (t + 1) * kHalf);
      torch::mse_loss(model(x), y).backward();
      dense.step();
      if (own) own->step();
    }
    trained[t] = values_of(*model);
    if (t == 0 && stats) *stats = dense.stats();
    // Sync tables' rows are read where the servers keep them (Note [shared rows]).
    const bool sync = options.mode == UpdateMode::kSync;
    EXPECT_EQ(in_place(), testing::shares_memory(transport) && sync ? num_servers : 0)
        << "trainer " << t << ": servers whose rows it reads in place";
  });
  for (int t = 0; t < kTrainers; ++t) {
    EXPECT_EQ(sharing[t], testing::shares_memory(transport) ? num_servers : 0)
        << "trainer " << t << ": servers sharing memory, transport " << to_string(transport);
  }
  return trained;
}

using Param = std::tuple<DenseRole, OptimizerKind, int, Transport>;

class DenseSync : public ::testing::TestWithParam<Param> {};

TEST_P(DenseSync, TwoTrainersEqualOneProcessOnTheConcatenatedBatch) {
  torch::set_num_threads(1);
  DenseOptions options;
  options.role = std::get<0>(GetParam());
  options.optimizer = optimizer_of(std::get<1>(GetParam()));
  options.layout = small_layout();
  const Data data = make_data();
  const Reference reference = train_reference(options.optimizer, data);
  std::vector<std::vector<at::Tensor>> trained;
  ASSERT_NO_THROW(trained = train_dense(options, reference.initial, data, std::get<2>(GetParam()),
                                        nullptr, std::get<3>(GetParam())));
  for (int t = 0; t < kTrainers; ++t) {
    for (size_t i = 0; i < reference.trained.size(); ++i) {
      EXPECT_TRUE(trained[t][i].allclose(reference.trained[i], 1e-4, 1e-5))
          << "trainer " << t << " parameter " << i << " max difference "
          << (trained[t][i] - reference.trained[i]).abs().max().item<float>();
      EXPECT_FALSE(trained[t][i].allclose(reference.initial[i], 1e-4, 1e-4)) << "parameter " << i;
    }
  }
}

// 16-bit floats on the wire: half the bytes of row data, and training close to the reference
// (each transfer rounds once; the servers keep float32).
TEST(DenseWire, SixteenBitPushesAndPullsHalveTheBytesAndTrainClose) {
  torch::set_num_threads(1);
  const Data data = make_data();
  for (const at::ScalarType wire : {at::kHalf, at::kBFloat16}) {
    DenseOptions options;
    options.optimizer = optimizer_of(OptimizerKind::kSgd);
    options.layout = small_layout();
    options.wire = wire;
    const Reference reference = train_reference(options.optimizer, data);
    DenseStats stats;
    std::vector<std::vector<at::Tensor>> trained;
    ASSERT_NO_THROW(trained = train_dense(options, reference.initial, data, 2, &stats));
    const double tolerance = wire == at::kHalf ? 2e-3 : 2e-2;
    for (size_t i = 0; i < reference.trained.size(); ++i) {
      EXPECT_TRUE(trained[1][i].allclose(reference.trained[i], tolerance, tolerance))
          << c10::toString(wire) << " parameter " << i << " max difference "
          << (trained[1][i] - reference.trained[i]).abs().max().item<float>();
    }
    const DenseLayout layout =
        make_dense_layout({{37, 13}, {37}, {5, 37}, {5, 3, 4}, {1}}, 2, small_layout());
    int64_t rows = 0;
    for (const DenseMessage& message : layout.push_messages) rows += message.rows;
    EXPECT_EQ(stats.bytes_pushed, kSteps * rows * (16 * 2 + 8));
  }
}

std::string name_of(const ::testing::TestParamInfo<Param>& info) {
  const auto [role, kind, servers, transport] = info.param;
  return std::string(to_string(role)) + "_" + to_string(kind) + "_" + std::to_string(servers) +
         "servers_" + to_string(transport);
}

constexpr DenseRole kOpt = DenseRole::kOptimizer;
constexpr DenseRole kSum = DenseRole::kSum;
constexpr OptimizerKind kSgd = OptimizerKind::kSgd;
constexpr OptimizerKind kAdam = OptimizerKind::kAdam;

INSTANTIATE_TEST_SUITE_P(Roles, DenseSync,
                         ::testing::Values(Param{kOpt, kSgd, 1, Transport::kShared},
                                           Param{kOpt, kAdam, 2, Transport::kShared},
                                           Param{kOpt, kSgd, 3, Transport::kShared},
                                           Param{kSum, kSgd, 2, Transport::kShared},
                                           Param{kSum, kAdam, 3, Transport::kShared},
                                           Param{kSum, kAdam, 1, Transport::kShared},
                                           Param{kOpt, kSgd, 3, Transport::kBytes},
                                           Param{kSum, kAdam, 2, Transport::kBytes},
                                           Param{kOpt, kAdam, 2, Transport::kOtherHost},
                                           Param{kOpt, kAdam, 3, Transport::kSharedOneProcess},
                                           Param{kSum, kSgd, 3, Transport::kSharedOneProcess}),
                         name_of);

// Position of the first event of `kind` (with `index` unless -2) in `events`, or events.size().
size_t position(const std::vector<DenseEvent>& events, DenseEvent::Kind kind, int index = -2) {
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind == kind && (index == -2 || events[i].index == index)) return i;
  }
  return events.size();
}

TEST(DenseOverlap, PushesStartDuringBackwardAndTheFirstLayerRunsBeforeTheLastBlockArrives) {
  torch::set_num_threads(1);
  Servers servers(2);
  OddNet model;
  DenseOptions options;
  options.layout = small_layout();
  options.overlap_forward = true;
  options.record_events = true;
  DenseModel dense(make_client(servers.addresses()), model, options);
  model->hook = dense.forward_pre_hook();
  const at::Tensor x = torch::randn({4, 13});
  const at::Tensor y = torch::randn({4, 12});
  for (int s = 0; s < 2; ++s) {
    dense.clear_events();
    torch::mse_loss(model(x), y).backward();
    const std::vector<DenseEvent> events = dense.events();
    // The head's gradient completes the first push message before l1's gradient exists.
    size_t last_gradient = 0;
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i].kind == DenseEvent::Kind::kGradient) last_gradient = i;
    }
    EXPECT_LT(position(events, DenseEvent::Kind::kPush), last_gradient);
    dense.clear_events();
    dense.step();
  }
  // After a step the pulls are in flight; the forward's first layer waits only for its own.
  dense.clear_events();
  torch::mse_loss(model(x), y).backward();
  const std::vector<DenseEvent> events = dense.events();
  const int last_message = static_cast<int>(dense.layout().pull_messages.size()) - 1;
  EXPECT_LT(position(events, DenseEvent::Kind::kLayer),
            position(events, DenseEvent::Kind::kArrived, last_message));
  EXPECT_GT(dense.layout().pull_messages.size(), 3u);
  dense.step();
  EXPECT_EQ(dense.stats().steps, 3);
  EXPECT_GT(dense.stats().bytes_pushed, 0);
}

TEST(DenseOverlap, AForwardWithoutTheHooksIsRefusedAtTheNextStep) {
  torch::set_num_threads(1);
  Servers servers(1);
  OddNet model;
  DenseOptions options;
  options.layout = small_layout();
  options.overlap_forward = true;
  DenseModel dense(make_client(servers.addresses()), model, options);
  const at::Tensor x = torch::randn({4, 13});
  torch::mse_loss(model(x), torch::zeros({4, 12})).backward();
  dense.step();  // pulls in flight; the next forward has no hook
  torch::mse_loss(model(x), torch::zeros({4, 12})).backward();
  try {
    dense.step();
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("forward_pre_hook"), std::string::npos)
        << error.what();
  }
}

TEST(DenseAsync, TwoTrainersWithBoundedStalenessFitARegression) {
  torch::set_num_threads(1);
  Servers servers(2);
  const Data data = make_data();
  std::vector<double> first(kTrainers), last(kTrainers);
  ASSERT_NO_THROW(run_trainers(kTrainers, [&](int t) {
    torch::manual_seed(3);
    OddNet model;
    DenseOptions options;
    options.mode = UpdateMode::kAsync;
    options.staleness = 2;  // Step calls wait when a trainer runs 3 steps ahead
    options.optimizer = optimizer_of(OptimizerKind::kAdam);
    options.layout = small_layout();
    DenseModel dense(make_client(servers.addresses(), t, kTrainers), model, options);
    const at::Tensor x = data.x[0].slice(0, t * kHalf, (t + 1) * kHalf);
    const at::Tensor y = x.matmul(torch::ones({13, 12}) * 0.1);
    for (int s = 0; s < 60; ++s) {
      at::Tensor loss = torch::mse_loss(model(x), y);
      if (s == 0) first[t] = loss.item<double>();
      last[t] = loss.item<double>();
      loss.backward();
      dense.step();
    }
  }));
  for (int t = 0; t < kTrainers; ++t) EXPECT_LT(last[t], 0.3 * first[t]) << "trainer " << t;
}

TEST(DenseFailures, AStoppedServerIsNamedByTheNextStep) {
  torch::set_num_threads(1);
  Servers servers(2);
  OddNet model;
  DenseOptions options;
  options.layout = small_layout();
  DenseModel dense(
      make_client(servers.addresses(), 0, 1, std::chrono::seconds(5), std::chrono::seconds(3)),
      model, options);
  const at::Tensor x = torch::randn({4, 13});
  torch::mse_loss(model(x), torch::zeros({4, 12})).backward();
  dense.step();
  servers.server(1).shutdown(std::chrono::milliseconds(100));
  const std::string stopped = servers.addresses()[1];
  const auto start = std::chrono::steady_clock::now();
  try {
    torch::mse_loss(model(x), torch::zeros({4, 12})).backward();
    dense.step();
    FAIL() << "expected an error naming " << stopped;
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(stopped), std::string::npos) << error.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

}  // namespace dense_equivalence_test
}  // namespace gradwire::ps
