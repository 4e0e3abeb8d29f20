// Requests for the parameter-server fuzz test (server_fuzz_test.cpp): well-formed requests of
// every method (the seeds of the mutations), well-formed messages with hostile values, byte
// mutations and random bytes. Pure functions of their arguments (and of the caller's rng).
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <unistd.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ps/messages/service_messages.h"
#include "rpc/proto/ps.pb.h"
#include "rpc/wire.h"
#include "server_test_support.h"

namespace gradwire::ps::testing::fuzz {

using google::protobuf::Message;

// The fuzzed tables' shape.
inline constexpr int64_t kRows = 10;
inline constexpr int64_t kDim = 4;
inline constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
inline constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();
inline constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();

// The names a request addresses.
struct Targets {
  const char* sync;   // a sync table of kRows x kDim, one trainer
  const char* async;  // an async table of kRows x kDim
  const char* fresh;  // a valid name of no table
};
inline constexpr char kUnknown[] = "no_such_table";

inline const google::protobuf::ServiceDescriptor& service() {
  return *v1::CreateTableRequest::descriptor()->file()->FindServiceByName("ParameterServer");
}

// An empty request of `method` (a method of service()).
inline std::unique_ptr<Message> new_request(const std::string& method) {
  const auto* input = service().FindMethodByName(method)->input_type();
  return std::unique_ptr<Message>(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(input)->New());
}

inline v1::Tensor tensor(v1::DType dtype, std::vector<int64_t> shape, std::string data) {
  v1::Tensor message;
  message.set_dtype(dtype);
  for (const int64_t size : shape) message.add_shape(size);
  message.set_data(std::move(data));
  return message;
}
inline v1::Tensor ids(const std::vector<int64_t>& values) {
  return rpc::encode_tensor(at::tensor(values, at::kLong));
}
inline v1::Tensor grads(int64_t n, int64_t dim = kDim, float value = 1.0f) {
  return rpc::encode_tensor(at::full({n, dim}, value));
}

// Tensors that decoding must refuse, or ids the table must refuse.
inline std::vector<v1::Tensor> hostile_tensors() {
  const std::string eight(8, '\0');
  std::vector<v1::Tensor> out = {
      tensor(v1::DTYPE_UNSPECIFIED, {1}, eight),
      tensor(static_cast<v1::DType>(7), {1}, eight),
      tensor(static_cast<v1::DType>(-1), {1}, eight),
      tensor(v1::FLOAT32, {2}, eight),  // float32 where int64 is expected, and the reverse
      tensor(v1::INT64, {1, kDim}, std::string(8 * kDim, '\0')),
      tensor(v1::INT64, {-1}, ""),
      tensor(v1::INT64, {kI64Min}, ""),
      tensor(v1::INT64, {kI64Max}, eight),
      tensor(v1::INT64, {int64_t{1} << 32, int64_t{1} << 32}, eight),
      tensor(v1::FLOAT32, {kI64Max, kI64Max}, eight),
      tensor(v1::INT64, {1, 1, 1, 1, 1, 1, 1, 1, 1}, eight),
      tensor(v1::INT64, {2}, std::string(15, '\0')),
      tensor(v1::INT64, {2}, std::string(17, '\0')),
      tensor(v1::INT64, {0}, eight),
      tensor(v1::INT64, {}, eight),
      ids({-1}),
      ids({kRows}),
      ids({kI64Max}),
      ids({kI64Min}),
      ids({0, 1, -5}),
  };
  v1::Tensor long_shape = tensor(v1::INT64, {}, eight);
  for (int i = 0; i < 100000; ++i) long_shape.add_shape(1);  // 100k dimensions
  out.push_back(std::move(long_shape));
  return out;
}

// References to shared memory that is not a trainer's region (rpc/shared_memory.h): this
// process's stdin, another process's descriptor, nonsense numbers, a key the server never saw.
inline std::vector<v1::SharedBytes> hostile_shared_bytes() {
  std::vector<v1::SharedBytes> out;
  const int32_t self = static_cast<int32_t>(::getpid());
  for (const auto& [pid, fd, offset] :
       std::vector<std::tuple<int32_t, int32_t, int64_t>>{{self, 0, 0},
                                                          {1, 0, 0},
                                                          {0, 3, 0},
                                                          {self, -1, 0},
                                                          {-7, 2, 0},
                                                          {self, 2, kI64Max},
                                                          {self, 1, -8},
                                                          {kI32Max, kI32Max, 4}}) {
    v1::SharedBytes ref;
    ref.set_key(0x5eed5eed5eedULL);
    ref.set_pid(pid);
    ref.set_fd(fd);
    ref.set_offset(offset);
    out.push_back(ref);
  }
  return out;
}

inline std::vector<v1::Tensor> hostile_grads() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<v1::Tensor> out = hostile_tensors();
  out.push_back(grads(3, kDim, nan));
  out.push_back(grads(3, kDim, inf));
  out.push_back(grads(3, kDim, 3e38f));  // finite, but ids {1, 3, 1} sum to infinity
  out.push_back(grads(3, kDim + 1));
  out.push_back(grads(2));
  out.push_back(grads(3, 0));
  for (const v1::SharedBytes& ref : hostile_shared_bytes()) {
    v1::Tensor shared = tensor(v1::FLOAT32, {3, kDim}, "");
    *shared.mutable_shared() = ref;
    out.push_back(shared);
  }
  return out;
}

inline v1::TableConfig config_message(const char* name, bool sync) {
  return to_message(table_config(name, kRows, kDim, sync ? UpdateMode::kSync : UpdateMode::kAsync));
}

inline std::vector<std::string> serialized(const std::vector<std::unique_ptr<Message>>& messages) {
  std::vector<std::string> out;
  for (const auto& message : messages) out.push_back(message->SerializeAsString());
  return out;
}

// Well-formed requests of `method` about `names`: the seeds of the mutations.
inline std::vector<std::string> valid_requests(const std::string& method, const Targets& names) {
  std::vector<std::unique_ptr<Message>> out;
  const auto add = [&](auto message) {
    out.push_back(std::make_unique<decltype(message)>(std::move(message)));
  };
  const std::vector<const char*> tables = {names.sync, names.async, kUnknown};
  if (method == "CreateTable") {
    for (const char* name : {names.sync, names.async, names.fresh}) {
      v1::CreateTableRequest request;
      *request.mutable_config() = config_message(name, name == names.sync);
      request.set_num_servers(1);
      add(request);
      request.mutable_config()->set_dim(2 * kDim);
      add(request);
    }
  } else if (method == "Lookup") {
    for (const char* name : tables) {
      v1::LookupRequest request;
      request.set_table(name);
      *request.mutable_ids() = ids({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
      add(request);
      *request.mutable_ids() = ids({3, 3, 1});
      add(request);
    }
  } else if (method == "Push") {
    for (const char* name : tables) {
      for (const int64_t step : {0, 2}) {
        v1::PushRequest request;
        request.set_table(name);
        request.set_step(step);
        *request.mutable_ids() = ids({1, 3, 1});
        *request.mutable_grads() = grads(3);
        add(request);
        request.mutable_attempt()->set_incarnation(1);
        add(request);
      }
    }
  } else if (method == "Step" || method == "Resume") {
    const auto add_all = [&](auto request) {  // a StepRequest or a ResumeRequest
      for (const char* name : tables) {
        for (const int64_t step : {0, 2}) {
          request.set_table(name);
          request.set_step(step);
          request.mutable_attempt()->set_restart(step == 0 ? 0 : 1);
          add(request);
        }
      }
    };
    method == "Step" ? add_all(v1::StepRequest()) : add_all(v1::ResumeRequest());
  } else if (method == "Checkpoint") {
    add(v1::CheckpointRequest());
  } else if (method == "Assign") {  // refused: the recorded tables are embedding tables
    for (const char* name : tables) {
      v1::AssignRequest request;
      request.set_table(name);
      *request.mutable_ids() = ids({1, 3});
      *request.mutable_rows() = grads(2);
      add(request);
      request.set_complete(true);
      add(request);
    }
  }
  if (method == "Batch") {
    // Every Push, Step and Lookup seed as a part, and all of them together in their order.
    v1::BatchRequest all;
    for (const std::string& bytes : valid_requests("Push", names)) {
      v1::BatchRequest request;
      request.add_pushes()->ParseFromString(bytes);
      *all.add_pushes() = request.pushes(0);
      add(request);
    }
    for (const std::string& bytes : valid_requests("Step", names)) {
      v1::BatchRequest request;
      request.add_steps()->ParseFromString(bytes);
      *all.add_steps() = request.steps(0);
      add(request);
    }
    for (const std::string& bytes : valid_requests("Lookup", names)) {
      v1::BatchRequest request;
      request.add_lookups()->ParseFromString(bytes);
      *all.add_lookups() = request.lookups(0);
      add(request);
    }
    add(all);
  }
  return serialized(out);
}

// Well-formed messages with hostile values, about `names` (big_name: a name of 1 MiB).
inline std::vector<std::string> hostile_requests(const std::string& method, const Targets& names,
                                                 const std::string& big_name) {
  std::vector<std::unique_ptr<Message>> out;
  const auto add = [&](auto message) {
    out.push_back(std::make_unique<decltype(message)>(std::move(message)));
  };
  const std::vector<std::string> bad_names = {big_name,
                                              "",
                                              ".",
                                              "..",
                                              "../../etc/passwd",
                                              std::string("kept\0sync", 9),
                                              std::string(65, 'a')};
  if (method == "CreateTable") {
    const auto request = [&](const char* name = nullptr) {
      v1::CreateTableRequest message;
      *message.mutable_config() = config_message(name ? name : names.fresh, false);
      message.set_num_servers(1);
      return message;
    };
    for (const std::string& name : bad_names) {
      auto message = request();
      message.mutable_config()->set_name(name);
      add(message);
    }
    for (const int64_t value : {int64_t{0}, int64_t{-1}, kI64Min, kI64Max, int64_t{1} << 40}) {
      auto message = request();
      message.mutable_config()->set_num_rows(value);
      add(message);
      message = request();
      message.mutable_config()->set_dim(value);
      add(message);
    }
    for (const int32_t trainers : {0, -1, kI32Min, kI32Max}) {
      auto message = request(names.sync);  // exists for the authenticated side: never built
      message.mutable_config()->set_num_trainers(trainers);
      add(message);
    }
    for (const auto& [index, count] :
         std::vector<std::pair<int32_t, int32_t>>{{-1, 1},
                                                  {1, 1},
                                                  {0, 0},
                                                  {0, -1},
                                                  {kI32Max, kI32Max},
                                                  {kI32Min, kI32Max},
                                                  {kI32Max - 1, kI32Max},
                                                  {0, kI32Min}}) {
      auto message = request();
      message.set_server_index(index);
      message.set_num_servers(count);
      add(message);
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    for (const double value : {nan, inf, -inf, -1.0, 0.0, 1.0, 1e308}) {
      for (int field = 0; field < 6; ++field) {
        auto message = request();
        v1::OptimizerConfig& optimizer = *message.mutable_config()->mutable_optimizer();
        if (field == 0) optimizer.set_lr(value);
        if (field == 1) optimizer.set_momentum(value);
        if (field == 2) optimizer.set_beta1(value);
        if (field == 3) optimizer.set_beta2(value);
        if (field == 4) optimizer.set_eps(value);
        if (field == 5) message.mutable_config()->mutable_initializer()->set_scale(value);
        add(message);
      }
    }
    for (const int value : {0, 4, 99, -3, kI32Max}) {  // unspecified and unknown enum values
      for (int field = 0; field < 4; ++field) {
        auto message = request();
        v1::TableConfig& config = *message.mutable_config();
        if (field == 0) config.mutable_optimizer()->set_kind(static_cast<v1::OptimizerKind>(value));
        if (field == 1) {
          config.mutable_initializer()->set_kind(static_cast<v1::InitializerKind>(value));
        }
        if (field == 2) config.set_mode(static_cast<v1::UpdateMode>(value));
        if (field == 3) config.set_reduction(static_cast<v1::GradientReduction>(value));
        add(message);
      }
    }
  } else if (method == "Lookup") {
    for (const v1::Tensor& hostile : hostile_tensors()) {
      v1::LookupRequest request;
      request.set_table(names.async);
      *request.mutable_ids() = hostile;
      add(request);
    }
    v1::LookupRequest request;
    request.set_table(names.async);
    *request.mutable_ids() = ids(std::vector<int64_t>(200000, 1));  // answer above the limit
    add(request);
    for (const v1::SharedBytes& ref : hostile_shared_bytes()) {
      v1::LookupRequest into;
      into.set_table(names.async);
      *into.mutable_ids() = ids({1, 3});
      *into.mutable_rows_into() = ref;
      add(into);
    }
    for (const std::string& name : bad_names) {
      request.set_table(name);
      *request.mutable_ids() = ids({1});
      add(request);
    }
  } else if (method == "Push") {
    const auto request = [&](const char* table) {
      v1::PushRequest message;
      message.set_table(table);
      *message.mutable_ids() = ids({1, 3, 1});
      *message.mutable_grads() = grads(3);
      return message;
    };
    for (const char* table : {names.sync, names.async}) {
      for (const v1::Tensor& hostile : hostile_tensors()) {
        auto message = request(table);
        *message.mutable_ids() = hostile;
        add(message);
      }
      for (const v1::Tensor& hostile : hostile_grads()) {
        auto message = request(table);
        *message.mutable_grads() = hostile;
        add(message);
      }
      for (const int32_t trainer : {-1, 1, kI32Max, kI32Min}) {
        auto message = request(table);
        message.set_trainer(trainer);
        add(message);
      }
      for (const int64_t value : {int64_t{-1}, kI64Max, kI64Min}) {
        auto message = request(table);
        message.set_step(value);
        add(message);
        message = request(table);
        message.mutable_attempt()->set_restart(value);
        add(message);
      }
      auto message = request(table);
      message.mutable_attempt()->set_incarnation(std::numeric_limits<uint64_t>::max());
      add(message);
    }
    for (const std::string& name : bad_names) {
      auto message = request(names.async);
      message.set_table(name);
      add(message);
    }
  } else if (method == "Step" || method == "Resume") {
    const auto add_all = [&](auto empty) {  // a StepRequest or a ResumeRequest
      const auto request = [&](const std::string& table) {
        auto message = empty;
        message.set_table(table);
        return message;
      };
      for (const char* table : {names.sync, names.async}) {
        for (const int32_t trainer : {-1, 1, kI32Max, kI32Min}) {
          auto message = request(table);
          message.set_trainer(trainer);
          add(message);
        }
        for (const int64_t value : {int64_t{-1}, int64_t{1} << 40, kI64Max, kI64Min}) {
          auto message = request(table);
          message.set_step(value);
          add(message);
          message = request(table);
          message.mutable_attempt()->set_restart(value);
          add(message);
        }
      }
      for (const std::string& name : bad_names) add(request(name));
    };
    method == "Step" ? add_all(v1::StepRequest()) : add_all(v1::ResumeRequest());
  } else if (method == "Assign") {
    const auto request = [&](const std::string& table) {
      v1::AssignRequest message;
      message.set_table(table);
      message.set_complete(true);
      *message.mutable_ids() = ids({1, 3});
      *message.mutable_rows() = grads(2);
      return message;
    };
    for (const char* table : {names.sync, names.async}) {
      for (const v1::Tensor& hostile : hostile_tensors()) {
        auto message = request(table);
        *message.mutable_ids() = hostile;
        add(message);
      }
      for (const v1::Tensor& hostile : hostile_grads()) {
        auto message = request(table);
        *message.mutable_rows() = hostile;
        add(message);
      }
      for (const int32_t trainer : {-1, 1, kI32Max, kI32Min}) {
        auto message = request(table);
        message.set_trainer(trainer);
        add(message);
      }
    }
    for (const std::string& name : bad_names) add(request(name));
  }
  if (method == "Batch") {
    // Every hostile Push, Step and Lookup as a batch's only part, then after a valid lookup.
    const auto wrap = [&](const std::string& part_method, auto set_part) {
      for (const std::string& bytes : hostile_requests(part_method, names, big_name)) {
        v1::BatchRequest request;
        set_part(request, bytes);
        add(request);
        v1::BatchRequest after;
        v1::LookupRequest* lookup = after.add_lookups();
        lookup->set_table(names.async);
        *lookup->mutable_ids() = ids({1});
        set_part(after, bytes);
        add(after);
      }
    };
    wrap("Push",
         [](v1::BatchRequest& r, const std::string& b) { r.add_pushes()->ParseFromString(b); });
    wrap("Step",
         [](v1::BatchRequest& r, const std::string& b) { r.add_steps()->ParseFromString(b); });
    wrap("Lookup",
         [](v1::BatchRequest& r, const std::string& b) { r.add_lookups()->ParseFromString(b); });
  }
  return serialized(out);
}

// Attempts beyond Note [attempt limits] (ps/core/table_shard.h), for a table at attempt 0 whose
// trainer 0 is at incarnation 0: far newer attempts of the job, and incarnations far after `now_ns`
// (this host's clock, in ns since the epoch), alone and together.
inline std::vector<v1::Attempt> hostile_attempts(uint64_t now_ns) {
  const auto attempt = [](int64_t restart, uint64_t incarnation) {
    v1::Attempt message;
    message.set_restart(restart);
    message.set_incarnation(incarnation);
    return message;
  };
  const uint64_t hour_ahead = now_ns + uint64_t{3600} * 1000000000u;
  return {attempt(kI64Max, 0),
          attempt(int64_t{1000000000000000000}, 0),
          attempt(kMaxAttemptJump + 1, 0),
          attempt(0, std::numeric_limits<uint64_t>::max()),
          attempt(0, hour_ahead),
          attempt(1, std::numeric_limits<uint64_t>::max()),
          attempt(kI64Max, hour_ahead)};
}

// Resume and Batch (a push, then a step: the only door of pushes and steps) requests of trainer
// 0 about `step` of `table`, carrying `attempt`: (method, request bytes).
inline std::vector<std::pair<std::string, std::string>> attempt_requests(
    const std::string& table, int64_t step, const v1::Attempt& attempt) {
  v1::PushRequest push;
  push.set_table(table);
  push.set_step(step);
  *push.mutable_ids() = ids({1});
  *push.mutable_grads() = grads(1);
  *push.mutable_attempt() = attempt;
  v1::StepRequest step_request;
  step_request.set_table(table);
  step_request.set_step(step);
  *step_request.mutable_attempt() = attempt;
  v1::ResumeRequest resume;
  resume.set_table(table);
  resume.set_step(step);
  *resume.mutable_attempt() = attempt;
  v1::BatchRequest pushes;
  *pushes.add_pushes() = push;
  v1::BatchRequest steps;
  *steps.add_steps() = step_request;
  return {{"Resume", resume.SerializeAsString()},
          {"Batch", pushes.SerializeAsString()},
          {"Batch", steps.SerializeAsString()}};
}

// 1 to 4 byte mutations of `bytes`.
inline std::string mutate(std::string bytes, std::mt19937_64& rng) {
  const auto below = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const int count = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < count; ++i) {
    const size_t at = below(bytes.size() + 1);
    switch (rng() % 6) {
      case 0:  // flip a bit
        if (at < bytes.size()) bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
        break;
      case 1: {  // overwrite with an interesting byte
        static constexpr unsigned char kBytes[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0x0a, 0x12};
        if (at < bytes.size()) bytes[at] = static_cast<char>(kBytes[rng() % sizeof(kBytes)]);
        break;
      }
      case 2: {  // insert random bytes
        std::string inserted(1 + below(16), '\0');
        for (char& c : inserted) c = static_cast<char>(rng());
        bytes.insert(at, inserted);
        break;
      }
      case 3:  // delete a range
        bytes.erase(std::min(at, bytes.size()), 1 + below(16));
        break;
      case 4: {  // duplicate a range
        const size_t from = below(bytes.size());
        bytes.insert(at, bytes.substr(from, 1 + below(32)));
        break;
      }
      default:  // truncate
        bytes.resize(std::min(at, bytes.size()));
    }
  }
  return bytes;
}

inline std::string random_bytes(size_t length, std::mt19937_64& rng) {
  std::string bytes(length, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  return bytes;
}

}  // namespace gradwire::ps::testing::fuzz
