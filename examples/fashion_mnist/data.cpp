#include "data.h"

#include <algorithm>
#include <filesystem>

#include "gradwire/common/error.h"
#include "gradwire/data/image_records.h"

namespace fashion_mnist {
namespace {

constexpr int kSide = 28;
// Mean and standard deviation of the Fashion-MNIST training pixels (scaled to [0, 1]).
constexpr float kPixelMean = 0.2860f;
constexpr float kPixelStd = 0.3530f;

}  // namespace

std::vector<std::string> split_files(const std::string& data_dir, const std::string& split) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(data_dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(split, 0) == 0 && entry.path().extension() == ".gwrio") {
      files.push_back(entry.path().string());
    }
  }
  if (error) {
    throw gradwire::InvalidArgument("cannot list --data " + data_dir + ": " + error.message());
  }
  if (files.empty()) {
    throw gradwire::InvalidArgument(
        "no " + split + "*.gwrio files in " + data_dir +
        "; convert the IDX files first: gradwire-recordio convert IMAGES LABELS " + data_dir + "/" +
        split + " (docs/data.md)");
  }
  std::sort(files.begin(), files.end());
  return files;
}

BatchReader::BatchReader(std::vector<std::string> files,
                         gradwire::data::ShardedReaderOptions options)
    : reader_(std::move(files), std::move(options)) {}

std::optional<Batch> BatchReader::next_batch(int64_t size, bool allow_partial) {
  torch::Tensor pixels = torch::empty({size, kSide * kSide}, torch::kUInt8);
  torch::Tensor labels = torch::empty({size}, torch::kInt64);
  uint8_t* pixel_data = pixels.data_ptr<uint8_t>();
  int64_t* label_data = labels.data_ptr<int64_t>();
  int64_t filled = 0;
  while (filled < size) {
    const std::optional<std::string_view> record = reader_.next_record();
    if (!record) break;
    const gradwire::data::ImageRecord image = gradwire::data::decode_image_record(*record);
    if (image.rows != kSide || image.cols != kSide) {
      throw gradwire::InvalidArgument("expected 28x28 Fashion-MNIST images, got " +
                                      std::to_string(image.rows) + "x" +
                                      std::to_string(image.cols));
    }
    std::copy(image.pixels.begin(), image.pixels.end(), pixel_data + filled * kSide * kSide);
    label_data[filled] = image.label;
    ++filled;
  }
  if (filled == 0 || (filled < size && !allow_partial)) return std::nullopt;
  pixels = pixels.narrow(0, 0, filled);
  Batch batch;
  batch.images = ((pixels.to(torch::kFloat32) / 255.0f - kPixelMean) / kPixelStd)
                     .view({filled, 1, kSide, kSide});
  batch.labels = labels.narrow(0, 0, filled);
  return batch;
}

}  // namespace fashion_mnist
