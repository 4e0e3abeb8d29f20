// The checkpoint header as JSON (checkpoint_header.h, docs/formats/ps-checkpoint.md).
#include "ps/core/checkpoint_header.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <set>

namespace gradwire::ps::checkpoint_format {
namespace {

using nlohmann::json;

[[noreturn]] void bad_field(const std::string& field, const std::string& problem) {
  throw FormatError(kHeaderOffset, "header field '" + field + "' " + problem);
}

const json& member(const json& object, const std::string& key, const std::string& path) {
  const auto found = object.find(key);
  if (found == object.end()) bad_field(path, "is missing");
  return *found;
}

int64_t get_int(const json& object, const std::string& key, const std::string& path) {
  const json& value = member(object, key, path);
  if (!value.is_number_integer()) bad_field(path, "is not an integer");
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    bad_field(path, "is too large");
  }
  return value.get<int64_t>();
}

int get_small_int(const json& object, const std::string& key, const std::string& path) {
  const int64_t value = get_int(object, key, path);
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
    bad_field(path, "is out of range");
  }
  return static_cast<int>(value);
}

uint64_t get_uint(const json& object, const std::string& key, const std::string& path) {
  const json& value = member(object, key, path);
  if (!value.is_number_unsigned()) bad_field(path, "is not an unsigned integer");
  return value.get<uint64_t>();
}

double get_double(const json& object, const std::string& key, const std::string& path) {
  const json& value = member(object, key, path);
  if (!value.is_number()) bad_field(path, "is not a number");
  return value.get<double>();
}

std::string get_string(const json& object, const std::string& key, const std::string& path) {
  const json& value = member(object, key, path);
  if (!value.is_string()) bad_field(path, "is not a string");
  return value.get<std::string>();
}

const json& get_object(const json& object, const std::string& key, const std::string& path) {
  const json& value = member(object, key, path);
  if (!value.is_object()) bad_field(path, "is not an object");
  return value;
}

// The enum value whose to_string() is the field's text.
template <typename Enum, size_t N>
Enum get_enum(const json& object, const std::string& key, const std::string& path,
              const Enum (&values)[N]) {
  const std::string text = get_string(object, key, path);
  for (Enum value : values) {
    if (text == to_string(value)) return value;
  }
  bad_field(path, "is '" + text + "', not a known value");
}

constexpr OptimizerKind kOptimizerKinds[] = {OptimizerKind::kSgd, OptimizerKind::kAdagrad,
                                             OptimizerKind::kAdam, OptimizerKind::kAssign};
constexpr TableKind kTableKinds[] = {TableKind::kEmbedding, TableKind::kDense};
constexpr InitializerKind kInitializerKinds[] = {
    InitializerKind::kNormal, InitializerKind::kUniform, InitializerKind::kZeros};
constexpr UpdateMode kModes[] = {UpdateMode::kSync, UpdateMode::kAsync};
constexpr GradientReduction kReductions[] = {GradientReduction::kMean, GradientReduction::kSum};

json encode_config(const TableConfig& config) {
  const OptimizerConfig& opt = config.optimizer;
  return json{{"name", config.name},
              {"num_rows", config.num_rows},
              {"dim", config.dim},
              {"optimizer",
               {{"kind", to_string(opt.kind)},
                {"lr", opt.lr},
                {"momentum", opt.momentum},
                {"beta1", opt.beta1},
                {"beta2", opt.beta2},
                {"eps", opt.eps}}},
              {"initializer",
               {{"kind", to_string(config.initializer.kind)},
                {"scale", config.initializer.scale},
                {"seed", config.initializer.seed}}},
              {"mode", to_string(config.mode)},
              {"reduction", to_string(config.reduction)},
              {"num_trainers", config.num_trainers},
              {"kind", to_string(config.kind)},
              {"staleness", config.staleness}};
}

TableConfig decode_config(const json& table) {
  TableConfig config;
  config.name = get_string(table, "name", "table.name");
  config.num_rows = get_int(table, "num_rows", "table.num_rows");
  config.dim = get_int(table, "dim", "table.dim");
  const json& opt = get_object(table, "optimizer", "table.optimizer");
  config.optimizer.kind = get_enum(opt, "kind", "table.optimizer.kind", kOptimizerKinds);
  config.optimizer.lr = get_double(opt, "lr", "table.optimizer.lr");
  config.optimizer.momentum = get_double(opt, "momentum", "table.optimizer.momentum");
  config.optimizer.beta1 = get_double(opt, "beta1", "table.optimizer.beta1");
  config.optimizer.beta2 = get_double(opt, "beta2", "table.optimizer.beta2");
  config.optimizer.eps = get_double(opt, "eps", "table.optimizer.eps");
  const json& init = get_object(table, "initializer", "table.initializer");
  config.initializer.kind = get_enum(init, "kind", "table.initializer.kind", kInitializerKinds);
  config.initializer.scale = get_double(init, "scale", "table.initializer.scale");
  config.initializer.seed = get_uint(init, "seed", "table.initializer.seed");
  config.mode = get_enum(table, "mode", "table.mode", kModes);
  config.reduction = get_enum(table, "reduction", "table.reduction", kReductions);
  config.num_trainers = get_small_int(table, "num_trainers", "table.num_trainers");
  // Files written before dense tables have no "kind": embedding tables.
  if (table.contains("kind")) config.kind = get_enum(table, "kind", "table.kind", kTableKinds);
  if (table.contains("staleness")) {
    config.staleness = get_small_int(table, "staleness", "table.staleness");
  }
  return config;
}

at::ScalarType dtype_of(const std::string& name, const std::string& path) {
  if (name == "float32") return at::kFloat;
  if (name == "int64") return at::kLong;
  bad_field(path, "is '" + name + "'; a checkpoint holds float32 or int64 tensors");
}

TensorEntry decode_entry(const json& entry, size_t index, int64_t data_bytes) {
  const std::string path = "tensors[" + std::to_string(index) + "]";
  if (!entry.is_object()) bad_field(path, "is not an object");
  TensorEntry tensor;
  tensor.name = get_string(entry, "name", path + ".name");
  tensor.dtype = dtype_of(get_string(entry, "dtype", path + ".dtype"), path + ".dtype");
  const json& shape = member(entry, "shape", path + ".shape");
  if (!shape.is_array() || shape.size() > 8) bad_field(path + ".shape", "is not an array of <= 8");
  // numel * element size, bounded by data_bytes so nothing overflows or over-allocates.
  const int64_t element = static_cast<int64_t>(c10::elementSize(tensor.dtype));
  int64_t bytes = element;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!shape[d].is_number_integer() || shape[d].get<int64_t>() < 0) {
      bad_field(path + ".shape", "has an entry that is not a size >= 0");
    }
    const int64_t size = shape[d].get<int64_t>();
    tensor.shape.push_back(size);
    if (size != 0 && bytes > data_bytes / size) {
      bad_field(path + ".shape",
                "describes more bytes than the data region's " + std::to_string(data_bytes));
    }
    bytes *= size;
  }
  tensor.offset = get_int(entry, "offset", path + ".offset");
  tensor.length = get_int(entry, "length", path + ".length");
  if (tensor.length != bytes) {
    bad_field(path + ".length", "is " + std::to_string(tensor.length) +
                                    " but shape and dtype of '" + tensor.name + "' need " +
                                    std::to_string(bytes) + " bytes");
  }
  return tensor;
}

}  // namespace

const char* dtype_name(at::ScalarType dtype) {
  if (dtype == at::kFloat) return "float32";
  if (dtype == at::kLong) return "int64";
  throw InvalidArgument(std::string("gradwire: a checkpoint cannot hold tensors of dtype ") +
                        c10::toString(dtype) + "; use float32 or int64");
}

std::string encode_header(const Header& header) {
  json tensors = json::array();
  for (const TensorEntry& tensor : header.tensors) {
    tensors.push_back({{"name", tensor.name},
                       {"dtype", dtype_name(tensor.dtype)},
                       {"shape", tensor.shape},
                       {"offset", tensor.offset},
                       {"length", tensor.length}});
  }
  const json document{
      {"table", encode_config(header.config)}, {"server_index", header.server_index},
      {"num_servers", header.num_servers},     {"step", header.step},
      {"data_bytes", header.data_bytes},       {"tensors", tensors}};
  return document.dump();
}

Header decode_header(std::string_view text, int64_t file_bytes) {
  json document;
  try {
    document = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& error) {
    const int64_t at = static_cast<int64_t>(error.byte > 0 ? error.byte - 1 : 0);
    throw FormatError(kHeaderOffset + at,
                      std::string("the header is not valid JSON: ") + error.what());
  }
  if (!document.is_object()) bad_field("(root)", "is not an object");
  Header header;
  header.config = decode_config(get_object(document, "table", "table"));
  header.server_index = get_small_int(document, "server_index", "server_index");
  header.num_servers = get_small_int(document, "num_servers", "num_servers");
  header.step = get_int(document, "step", "step");
  header.data_bytes = get_int(document, "data_bytes", "data_bytes");
  const int64_t room = file_bytes - kMinFileBytes - static_cast<int64_t>(text.size());
  if (header.data_bytes < 0 || header.data_bytes > room) {
    throw FormatError(kHeaderOffset + static_cast<int64_t>(text.size()),
                      "the header declares " + std::to_string(header.data_bytes) +
                          " data bytes after it, but the file has room for " +
                          std::to_string(room < 0 ? 0 : room) + ": the file is truncated",
                      /*truncated=*/true);
  }
  const json& tensors = member(document, "tensors", "tensors");
  if (!tensors.is_array()) bad_field("tensors", "is not an array");
  std::set<std::string> names;
  int64_t next_offset = 0;
  for (size_t index = 0; index < tensors.size(); ++index) {
    TensorEntry tensor = decode_entry(tensors[index], index, header.data_bytes);
    const std::string path = "tensors[" + std::to_string(index) + "]";
    if (!names.insert(tensor.name).second)
      bad_field(path + ".name", "repeats '" + tensor.name + "'");
    if (tensor.offset != next_offset || tensor.length > header.data_bytes - next_offset) {
      bad_field(path + ".offset", "places '" + tensor.name + "' at " +
                                      std::to_string(tensor.offset) + " (+" +
                                      std::to_string(tensor.length) + " bytes); expected " +
                                      std::to_string(next_offset) + " within the data region of " +
                                      std::to_string(header.data_bytes) + " bytes");
    }
    next_offset += tensor.length;
    header.tensors.push_back(std::move(tensor));
  }
  if (next_offset != header.data_bytes) {
    bad_field("data_bytes", "is " + std::to_string(header.data_bytes) + " but the tensors fill " +
                                std::to_string(next_offset));
  }
  if (header.tensors.empty() || header.tensors.front().name != "weights") {
    bad_field("tensors", "does not start with 'weights'");
  }
  return header;
}

}  // namespace gradwire::ps::checkpoint_format
