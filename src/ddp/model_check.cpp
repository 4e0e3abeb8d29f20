#include "model_check.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <sstream>

#include "gradwire/common/error.h"

namespace gradwire::ddp {
namespace {

constexpr const char* kOptionPrefix = "option ";

std::string describe(const char* kind, const std::string& name, const at::Tensor& t) {
  std::ostringstream line;
  line << kind << ' ' << name << ' ' << t.scalar_type() << " [";
  for (int64_t d = 0; d < t.dim(); ++d) line << (d ? ", " : "") << t.size(d);
  line << ']';
  return line.str();
}

std::string join_ranks(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  return out.str();
}

std::string entry_or_none(const std::vector<std::string>& entries, size_t i) {
  return i < entries.size() ? "'" + entries[i] + "'"
                            : "nothing (" + std::to_string(entries.size()) + " entries in all)";
}

// Concatenates lines with '\n' and splits them back.
std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + '\n';
  return out;
}
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

std::vector<std::string> describe_options(const DdpOptions& options) {
  const auto number = [](const std::optional<double>& value) {
    std::ostringstream text;
    text.precision(17);
    if (value) {
      text << *value;
    } else {
      text << "unset";
    }
    return text.str();
  };
  const auto flag = [](bool value) { return std::string(value ? "true" : "false"); };
  return {kOptionPrefix + std::string("bucket_cap_mb ") + number(options.bucket_cap_mb),
          kOptionPrefix + std::string("first_bucket_mb ") + number(options.first_bucket_mb),
          kOptionPrefix + std::string("broadcast_buffers ") + flag(options.broadcast_buffers),
          kOptionPrefix + std::string("find_unused_parameters ") +
              flag(options.find_unused_parameters),
          kOptionPrefix + std::string("static_graph ") + flag(options.static_graph)};
}

std::vector<std::string> describe_model(torch::nn::Module& module) {
  std::vector<std::string> lines;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    lines.push_back(describe("parameter", item.key(), item.value()));
  }
  for (const auto& item : module.named_buffers(/*recurse=*/true)) {
    lines.push_back(describe("buffer", item.key(), item.value()));
  }
  return lines;
}

std::optional<std::string> find_model_mismatch(
    const std::vector<std::vector<std::string>>& descriptions) {
  if (descriptions.size() < 2) return std::nullopt;
  const auto& reference = descriptions[0];
  size_t longest = 0;
  for (const auto& d : descriptions) longest = std::max(longest, d.size());
  for (size_t i = 0; i < longest; ++i) {
    std::vector<int> differing;
    for (size_t r = 1; r < descriptions.size(); ++r) {
      const auto& d = descriptions[r];
      bool same = i < d.size() && i < reference.size() && d[i] == reference[i];
      if (!same) differing.push_back(static_cast<int>(r));
    }
    if (differing.empty()) continue;
    const bool option = i < reference.size() && reference[i].rfind(kOptionPrefix, 0) == 0;
    std::ostringstream message;
    message << "DistributedDataParallel: the " << (option ? "options differ" : "model differs")
            << " across ranks at entry " << i << ": rank 0 has " << entry_or_none(reference, i);
    for (int r : differing) {
      message << "; rank " << r << " has " << entry_or_none(descriptions[r], i);
    }
    if (option) {
      message << ". Every rank must use the same DdpOptions for its buckets and broadcasts (the "
                 "bucket caps may come from GRADWIRE_BUCKET_CAP_MB and GRADWIRE_FIRST_BUCKET_MB); ";
    } else {
      message << ". Every rank must build the same model (same parameters and buffers, in the "
                 "same registration order) before wrapping it; ";
    }
    message << join_ranks(differing) << " differ from rank 0.";
    return message.str();
  }
  return std::nullopt;
}

void check_model_across_ranks(torch::nn::Module& module, const DdpOptions& options,
                              Communicator& comm) {
  if (comm.size() < 2) return;
  std::vector<std::string> lines = describe_options(options);
  for (auto& line : describe_model(module)) lines.push_back(std::move(line));
  std::string mine = join_lines(lines);
  // Exchanged on the communicator's device (CUDA for nccl), read on the CPU.
  const auto on_device = at::TensorOptions().device(comm.device());
  at::Tensor length = at::full({1}, static_cast<int64_t>(mine.size()), on_device.dtype(at::kLong));
  at::Tensor lengths = at::empty({comm.size()}, on_device.dtype(at::kLong));
  comm.allgather(length, lengths)->wait();
  lengths = lengths.cpu();
  int64_t longest = lengths.max().item<int64_t>();

  at::Tensor text = at::zeros({std::max<int64_t>(longest, 1)}, at::kByte);
  std::copy(mine.begin(), mine.end(), text.data_ptr<uint8_t>());
  text = text.to(comm.device());
  at::Tensor all = at::empty({comm.size() * text.numel()}, on_device.dtype(at::kByte));
  comm.allgather(text, all)->wait();
  all = all.cpu();

  std::vector<std::vector<std::string>> descriptions;
  const auto* bytes = reinterpret_cast<const char*>(all.data_ptr<uint8_t>());
  for (int r = 0; r < comm.size(); ++r) {
    const char* start = bytes + r * text.numel();
    descriptions.push_back(split_lines(std::string(start, lengths[r].item<int64_t>())));
  }
  if (auto mismatch = find_model_mismatch(descriptions)) throw InvalidArgument(*mismatch);
}

}  // namespace gradwire::ddp
