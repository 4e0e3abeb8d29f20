// DenseModel (include/gradwire/ps/dense.h): a module's parameters as the rows of one dense table.
// Gradients are copied into per-message buffers by hooks while backward runs and each message is
// pushed as soon as all its parameters' gradients are in; after the servers' step the new values
// (or, in the summation role, the reduced gradients) are pulled message by message in forward
// order.
#include <torch/autograd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include "device_copy.h"
#include "gradwire/common/error.h"
#include "gradwire/ps/dense.h"

namespace gradwire::ps {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Part of one parameter's flattened elements [begin, end) at element `offset` of a message's
// [rows, W] buffer.
struct Piece {
  int param = 0;
  int64_t begin = 0;
  int64_t end = 0;
  int64_t offset = 0;
};

}  // namespace

const char* to_string(DenseRole role) {
  return role == DenseRole::kOptimizer ? "optimizer" : "sum";
}

struct DenseModel::State {
  std::shared_ptr<Client> client;
  std::shared_ptr<torch::nn::Module> module;
  DenseOptions options;
  std::vector<std::string> names;
  std::vector<at::Tensor> params;
  std::map<const c10::TensorImpl*, int> param_index;
  std::vector<unsigned> hook_handles;
  DenseLayout layout;

  // Messages: ids, pieces, and per parameter the (message, piece) pairs it fills.
  std::vector<at::Tensor> push_ids;
  std::vector<std::vector<Piece>> push_pieces;
  std::vector<std::vector<std::pair<int, int>>> param_push_pieces;
  std::vector<int> push_params;  // distinct parameters per push message
  std::vector<at::Tensor> pull_ids;
  std::vector<std::vector<Piece>> pull_pieces;
  std::vector<at::Tensor> pull_buffers;  // [rows, W] per pull message (float32 wire only)
  std::vector<std::vector<int64_t>> pull_local_rows;  // per message and piece: its first local row

  // Guarded by mutex (gradient hooks run on autograd's thread):
  std::mutex mutex;
  std::vector<at::Tensor> push_buffers;  // [rows, W] per push message; padding stays zero
  std::vector<int> push_missing;         // parameters still to come this step, per message
  std::vector<char> pushed;              // sent this step, per message
  std::vector<char> grad_seen;           // per parameter, this step
  DenseStats stats;
  std::vector<DenseEvent> events;

  // The training thread's: pulls in flight, by pull message; arrived this step.
  std::vector<std::unique_ptr<PendingLookup>> pulls;
  std::vector<char> arrived;
  // Per server, its rows read in place this step (Client::server_rows), when all servers offer
  // them; else empty and the pulls are lookups.
  std::vector<at::Tensor> server_rows;

  // Row data in the wire type and 8 bytes of id per row.
  int64_t wire_bytes(const DenseMessage& message) const {
    return message.rows *
           (layout.row_width * static_cast<int64_t>(c10::elementSize(options.wire)) + 8);
  }

  void record(DenseEvent::Kind kind, int index) {
    if (options.record_events) events.push_back(DenseEvent{kind, index});
  }

  // `message` with its ranges in the order of their ids (a server's ranges hold disjoint runs of
  // its local rows), so that a push or pull carries increasing ids: the client then neither
  // sorts nor sums them (Client::push, lookups of unique sorted ids).
  DenseMessage in_id_order(DenseMessage message) const {
    std::sort(message.ranges.begin(), message.ranges.end(),
              [&](const RowRange& a, const RowRange& b) { return first_id(a) < first_id(b); });
    return message;
  }

  int64_t first_id(const RowRange& range) const {
    const DenseBlock& block = layout.blocks[static_cast<size_t>(range.block)];
    return block.first_id + range.first_row * layout.num_servers;
  }

  std::vector<Piece> pieces_of(const DenseMessage& message) const {
    std::vector<Piece> pieces;
    int64_t row = 0;
    for (const RowRange& range : message.ranges) {
      const ElementRange elements = range_elements(layout, range);
      pieces.push_back(Piece{elements.param, elements.begin, elements.end, row * layout.row_width});
      row += range.rows;
    }
    return pieces;
  }

  at::Tensor ids_of(const DenseMessage& message) const {
    const std::vector<int64_t> ids = message_ids(layout, message);
    for (size_t i = 1; i < ids.size(); ++i) GRADWIRE_CHECK_LT(ids[i - 1], ids[i]);
    return at::tensor(ids, at::kLong);
  }

  void build_messages() {
    param_push_pieces.assign(params.size(), {});
    for (size_t m = 0; m < layout.push_messages.size(); ++m) {
      const DenseMessage message = in_id_order(layout.push_messages[m]);
      push_ids.push_back(ids_of(message));
      push_pieces.push_back(pieces_of(message));
      std::vector<int> distinct;
      for (size_t p = 0; p < push_pieces.back().size(); ++p) {
        const int param = push_pieces.back()[p].param;
        param_push_pieces[static_cast<size_t>(param)].emplace_back(static_cast<int>(m),
                                                                   static_cast<int>(p));
        if (std::find(distinct.begin(), distinct.end(), param) == distinct.end()) {
          distinct.push_back(param);
        }
      }
      push_params.push_back(static_cast<int>(distinct.size()));
      // In shared memory: servers on this host read it in place (docs/ps.md "Shared memory").
      push_buffers.push_back(client->shared_tensor({message.rows, layout.row_width}));
    }
    for (const DenseMessage& pull : layout.pull_messages) {
      const DenseMessage message = in_id_order(pull);
      pull_ids.push_back(ids_of(message));
      pull_pieces.push_back(pieces_of(message));
      // Each piece is one range of a block: consecutive local rows from the first one's.
      std::vector<int64_t> local;
      const int64_t* ids = pull_ids.back().data_ptr<int64_t>();
      for (const Piece& piece : pull_pieces.back()) {
        local.push_back(ids[piece.offset / layout.row_width] / layout.num_servers);
      }
      pull_local_rows.push_back(std::move(local));
    }
    pulls.resize(layout.pull_messages.size());
    arrived.assign(layout.pull_messages.size(), 1);
    reset_step_locked();
  }

  void reset_step_locked() {
    push_missing = push_params;
    pushed.assign(push_params.size(), 0);
    grad_seen.assign(params.size(), 0);
  }

  // Sends push message `m`. Its buffer is copied before push() returns, or, in shared memory, read
  // by the servers until the step is applied: the hooks write it again only after step().
  void push_locked(int m) {
    const at::Tensor& buffer = push_buffers[static_cast<size_t>(m)];
    client->push(options.table, push_ids[static_cast<size_t>(m)],
                 options.wire == at::kFloat ? buffer : buffer.to(options.wire));
    pushed[static_cast<size_t>(m)] = 1;
    stats.bytes_pushed += wire_bytes(layout.push_messages[static_cast<size_t>(m)]);
    record(DenseEvent::Kind::kPush, m);
  }

  // The gradient hook of parameter `param`.
  void on_gradient(int param, const at::Tensor& grad) {
    const at::Tensor flat = to_host(grad.detach().to(at::kFloat)).view(-1);
    const float* from = flat.data_ptr<float>();
    const std::lock_guard<std::mutex> lock(mutex);
    record(DenseEvent::Kind::kGradient, param);
    if (grad_seen[static_cast<size_t>(param)]) {
      throw InvalidArgument(
          "gradwire: DenseModel: parameter '" + names[static_cast<size_t>(param)] +
          "' got a second gradient before step(); call step() after each backward");
    }
    grad_seen[static_cast<size_t>(param)] = 1;
    std::vector<int> touched;
    for (const auto& [m, p] : param_push_pieces[static_cast<size_t>(param)]) {
      const Piece& piece = push_pieces[static_cast<size_t>(m)][static_cast<size_t>(p)];
      float* to = push_buffers[static_cast<size_t>(m)].data_ptr<float>() + piece.offset;
      std::memcpy(to, from + piece.begin, static_cast<size_t>(piece.end - piece.begin) * 4);
      if (std::find(touched.begin(), touched.end(), m) == touched.end()) touched.push_back(m);
    }
    for (int m : touched) {
      if (--push_missing[static_cast<size_t>(m)] == 0) push_locked(m);
    }
  }

  // Waits for pull message `m` and copies its rows into the parameters (or, with `into_grad`,
  // their gradients): from the server's own rows when it offers them, else from the lookup.
  void take_pull(int m, bool into_grad) {
    if (arrived[static_cast<size_t>(m)]) return;
    const auto start = Clock::now();
    at::Tensor rows;
    if (server_rows.empty()) {
      rows = pulls[static_cast<size_t>(m)]->wait().contiguous();
      pulls[static_cast<size_t>(m)].reset();
    }
    const float* in_rows =
        server_rows.empty()
            ? nullptr
            : server_rows[static_cast<size_t>(layout.pull_messages[static_cast<size_t>(m)].server)]
                  .data_ptr<float>();
    const float* from = rows.defined() ? rows.data_ptr<float>() : nullptr;
    at::NoGradGuard no_grad;
    const std::vector<Piece>& pieces = pull_pieces[static_cast<size_t>(m)];
    // Pieces of device parameters go through a pinned buffer of the message's size, then
    // asynchronously to the device (device_copy.h); host parameters take them in place.
    at::Tensor staging;
    for (size_t p = 0; p < pieces.size(); ++p) {
      const Piece& piece = pieces[p];
      const float* source =
          in_rows ? in_rows + pull_local_rows[static_cast<size_t>(m)][p] * layout.row_width
                  : from + piece.offset;
      at::Tensor& param = params[static_cast<size_t>(piece.param)];
      at::Tensor target;
      if (into_grad) {
        if (!param.grad().defined()) param.mutable_grad() = at::zeros_like(param);
        target = param.grad();
      } else {
        target = param;
      }
      const auto count = static_cast<size_t>(piece.end - piece.begin);
      if (target.device().is_cpu()) {
        std::memcpy(target.data_ptr<float>() + piece.begin, source, count * 4);
        continue;
      }
      if (!staging.defined()) {
        staging = staging_buffer({layout.pull_messages[static_cast<size_t>(m)].rows *
                                  layout.row_width},
                                 target.device());
      }
      std::memcpy(staging.data_ptr<float>() + piece.offset, source, count * 4);
      target.view(-1)
          .narrow(0, piece.begin, piece.end - piece.begin)
          .copy_(staging.narrow(0, piece.offset, piece.end - piece.begin), /*non_blocking=*/true);
    }
    arrived[static_cast<size_t>(m)] = 1;
    const std::lock_guard<std::mutex> lock(mutex);
    stats.pull_wait_s += seconds_since(start);
    stats.bytes_pulled += wire_bytes(layout.pull_messages[static_cast<size_t>(m)]);
    record(DenseEvent::Kind::kArrived, m);
  }

  // After a sync step: read the servers' rows in place when every server offers them (Note
  // [shared rows] in service.cpp); nothing to send then.
  bool read_in_place() {
    server_rows.clear();
    if (options.mode != UpdateMode::kSync || options.wire != at::kFloat) return false;
    std::vector<at::Tensor> rows;
    for (int server = 0; server < layout.num_servers; ++server) {
      rows.push_back(client->server_rows(options.table, server));
      if (!rows.back().defined()) return false;
    }
    server_rows = std::move(rows);
    for (size_t m = 0; m < pull_ids.size(); ++m) {
      arrived[m] = 0;
      const std::lock_guard<std::mutex> lock(mutex);
      record(DenseEvent::Kind::kPullSent, static_cast<int>(m));
    }
    return true;
  }

  // Sends the pulls as lookups; `into_buffers`: the answers go into shared pull buffers.
  void start_pulls(bool into_buffers = true) {
    server_rows.clear();
    // The servers write float32 rows into these themselves when they share memory; made when
    // first needed (sync pulls read the servers' rows in place and never need them).
    if (into_buffers && pull_buffers.empty() && options.wire == at::kFloat) {
      for (const DenseMessage& message : layout.pull_messages) {
        pull_buffers.push_back(client->shared_tensor({message.rows, layout.row_width}));
      }
    }
    for (size_t m = 0; m < pull_ids.size(); ++m) {
      pulls[m] = client->start_lookup(options.table, pull_ids[m], options.wire,
                                      into_buffers && !pull_buffers.empty() ? pull_buffers[m]
                                                                            : at::Tensor());
      arrived[m] = 0;
      const std::lock_guard<std::mutex> lock(mutex);
      record(DenseEvent::Kind::kPullSent, static_cast<int>(m));
    }
  }

  void take_all_pulls(bool into_grad) {
    for (size_t m = 0; m < pulls.size(); ++m) take_pull(static_cast<int>(m), into_grad);
  }

  // Trainer 0 writes its parameters to a table that waits for them.
  void assign_values() {
    std::vector<at::Tensor> ids;
    std::vector<at::Tensor> rows;
    for (size_t m = 0; m < layout.pull_messages.size(); ++m) {
      at::Tensor buffer = at::zeros({layout.pull_messages[m].rows, layout.row_width}, at::kFloat);
      float* to = buffer.data_ptr<float>();
      for (const Piece& piece : pull_pieces[m]) {
        const at::Tensor flat = to_host(params[static_cast<size_t>(piece.param)].detach()).view(-1);
        std::memcpy(to + piece.offset, flat.data_ptr<float>() + piece.begin,
                    static_cast<size_t>(piece.end - piece.begin) * 4);
      }
      ids.push_back(pull_ids[m]);
      rows.push_back(buffer);
    }
    client->assign(options.table, at::cat(ids), at::cat(rows));
  }
};

DenseModel::DenseModel(std::shared_ptr<Client> client, std::shared_ptr<torch::nn::Module> module,
                       DenseOptions options)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  if (!client || !module) throw InvalidArgument("gradwire: DenseModel needs a client and a module");
  if (options.wire != at::kFloat && options.wire != at::kHalf && options.wire != at::kBFloat16) {
    throw InvalidArgument("gradwire: DenseOptions::wire is " +
                          std::string(c10::toString(options.wire)) +
                          "; use at::kFloat, at::kHalf or at::kBFloat16");
  }
  if (options.role == DenseRole::kSum && options.mode != UpdateMode::kSync) {
    throw InvalidArgument(
        "gradwire: DenseModel: the summation role (DenseRole::kSum) needs sync mode: the servers "
        "hold one step's reduced gradient");
  }
  s.client = std::move(client);
  s.module = std::move(module);
  s.options = std::move(options);
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& item : s.module->named_parameters(/*recurse=*/true)) {
    const at::Tensor& param = item.value();
    const bool on_cpu_or_cuda = param.device().is_cpu() || param.device().is_cuda();
    if (param.scalar_type() != at::kFloat || !on_cpu_or_cuda || !param.is_contiguous()) {
      throw InvalidArgument("gradwire: DenseModel: parameter '" + item.key() +
                            "' must be a contiguous float32 tensor on the CPU or a CUDA device, "
                            "got " + std::string(param.toString()) + " on " +
                            param.device().str());
    }
    s.param_index[param.unsafeGetTensorImpl()] = static_cast<int>(s.params.size());
    s.names.push_back(item.key());
    s.params.push_back(param);
    shapes.push_back(param.sizes().vec());
  }
  if (s.params.empty()) throw InvalidArgument("gradwire: DenseModel: the module has no parameters");
  s.layout = make_dense_layout(shapes, s.client->num_servers(), s.options.layout);
  s.build_messages();

  TableConfig config;
  config.name = s.options.table;
  config.kind = TableKind::kDense;
  config.num_rows = s.layout.num_rows;
  config.dim = s.layout.row_width;
  config.optimizer = s.options.optimizer;
  if (s.options.role == DenseRole::kSum) config.optimizer = OptimizerConfig{OptimizerKind::kAssign};
  config.initializer = InitializerConfig{InitializerKind::kZeros, 0.0, 0};
  config.mode = s.options.mode;
  config.staleness = s.options.staleness;
  config.num_trainers = s.client->world_size();
  s.client->create_table(config);
  if (s.client->rank() == 0 && s.client->awaiting_values(config.name)) s.assign_values();
  if (s.options.resume_step) s.client->resume(*s.options.resume_step);
  // Every trainer starts from the servers' values: trainer 0's parameters, or a restored
  // checkpoint's. The summation role's rows hold reduced gradients after step 0: a restarted
  // trainer there keeps its own parameters (from its own checkpoint), as with DDP.
  if (s.options.role == DenseRole::kOptimizer || s.client->step_count(config.name) == 0) {
    s.start_pulls(/*into_buffers=*/false);  // once: plain lookups
    s.take_all_pulls(/*into_grad=*/false);
  }
  State* raw = state_.get();
  for (size_t i = 0; i < s.params.size(); ++i) {
    const int index = static_cast<int>(i);
    s.hook_handles.push_back(s.params[i].register_hook(
        [raw, index](const at::Tensor& grad) { raw->on_gradient(index, grad); }));
  }
}

DenseModel::~DenseModel() {
  for (size_t i = 0; i < state_->params.size(); ++i) {
    state_->params[i].remove_hook(state_->hook_handles[i]);
  }
}

void DenseModel::step() {
  State& s = *state_;
  for (size_t m = 0; m < s.arrived.size(); ++m) {
    if (s.arrived[m]) continue;
    // The last forward ran before these values arrived: a layer had no forward pre-hook.
    std::string params;
    for (const Piece& piece : s.pull_pieces[m]) {
      params += (params.empty() ? "'" : ", '") + s.names[static_cast<size_t>(piece.param)] + "'";
    }
    throw InvalidArgument(
        "gradwire: DenseModel::step: the forward pass ran before the new values of " + params +
        " arrived (overlap_forward is on, but no forward pre-hook waited for them). "
        "Install forward_pre_hook() on every layer, or turn overlap_forward off");
  }
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    for (size_t m = 0; m < s.pushed.size(); ++m) {
      if (s.pushed[m]) continue;
      // Parameters without a gradient this step push zeros.
      for (const Piece& piece : s.push_pieces[m]) {
        if (s.grad_seen[static_cast<size_t>(piece.param)]) continue;
        std::memset(s.push_buffers[m].data_ptr<float>() + piece.offset, 0,
                    static_cast<size_t>(piece.end - piece.begin) * 4);
      }
      s.push_locked(static_cast<int>(m));
    }
    s.reset_step_locked();
  }
  const auto push_start = Clock::now();
  s.client->flush();
  const double push_wait = seconds_since(push_start);
  const auto step_start = Clock::now();
  s.client->step();
  const double server_step = seconds_since(step_start);
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    s.stats.push_wait_s += push_wait;
    s.stats.server_step_s += server_step;
    ++s.stats.steps;
  }
  if (!s.read_in_place()) s.start_pulls();
  if (s.options.role == DenseRole::kSum) {
    s.take_all_pulls(/*into_grad=*/true);
  } else if (!s.options.overlap_forward) {
    s.take_all_pulls(/*into_grad=*/false);
  }
}

std::function<void(const torch::nn::Module&)> DenseModel::forward_pre_hook() {
  State* raw = state_.get();
  return [raw](const torch::nn::Module& layer) {
    int first = -1;
    for (const at::Tensor& param : layer.parameters(/*recurse=*/true)) {
      const auto found = raw->param_index.find(param.unsafeGetTensorImpl());
      if (found == raw->param_index.end()) continue;
      if (first < 0) first = found->second;
      for (int m : raw->layout.param_pull_messages[static_cast<size_t>(found->second)]) {
        raw->take_pull(m, /*into_grad=*/false);
      }
    }
    const std::lock_guard<std::mutex> lock(raw->mutex);
    raw->record(DenseEvent::Kind::kLayer, first);
  };
}

void DenseModel::wait_for_parameters() {
  state_->take_all_pulls(/*into_grad=*/state_->options.role == DenseRole::kSum);
}

const DenseLayout& DenseModel::layout() const { return state_->layout; }

std::string DenseModel::describe_layout() const { return describe(state_->layout, state_->names); }

DenseStats DenseModel::stats() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->stats;
}

std::vector<DenseEvent> DenseModel::events() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->events;
}

void DenseModel::clear_events() {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  state_->events.clear();
}

}  // namespace gradwire::ps
