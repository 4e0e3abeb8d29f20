#include "cases/data_bench_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "gradwire/common/error.h"
#include "gradwire/data/idx_convert.h"
#include "gradwire/data/recordio_inspect.h"
#include "gradwire/data/recordio_writer.h"

namespace gradwire::bench {

namespace {

namespace fs = std::filesystem;

// splitmix64: a good 64-bit mix of a counter.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void create_directory(const std::string& directory) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) {
    throw InvalidArgument("cannot create directory " + directory + ": " + error.message() +
                          "; choose another with --scratch");
  }
}

std::string file_name(const std::string& stem, int index, int count) {
  char name[64];
  std::snprintf(name, sizeof(name), "%s-%05d-of-%05d.gwrio", stem.c_str(), index, count);
  return name;
}

// Closes a file descriptor when it goes out of scope.
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::uint64_t generated_record_size(std::uint64_t index, std::uint64_t mean_bytes) {
  const std::uint64_t low = std::max<std::uint64_t>(1, mean_bytes / 2);
  const std::uint64_t span = mean_bytes + 1;  // [mean/2, mean/2 + mean]
  return low + mix(index) % span;
}

std::string generated_record(std::uint64_t index, std::uint64_t mean_bytes) {
  std::string record(generated_record_size(index, mean_bytes), '\0');
  std::uint64_t state = mix(index ^ 0x5eedULL);
  for (std::size_t i = 0; i < record.size(); i += 16) {
    std::uint64_t bits = mix(state++);
    const std::size_t end = std::min(record.size(), i + 16);
    for (std::size_t j = i; j < end; ++j, bits >>= 4)
      record[j] = static_cast<char>('a' + (bits & 15));
  }
  return record;
}

std::vector<std::string> write_generated_set(const std::string& directory,
                                             const GeneratedSpec& spec,
                                             data::Compression compression) {
  create_directory(directory);
  data::RecordWriterOptions options;
  options.chunk_bytes = spec.chunk_bytes;
  options.compression = compression;
  const std::uint64_t bytes_per_file = spec.bytes / static_cast<std::uint64_t>(spec.files);
  std::vector<std::string> paths;
  std::uint64_t index = 0;
  for (int f = 0; f < spec.files; ++f) {
    const std::string path = (fs::path(directory) / file_name("generated", f, spec.files)).string();
    data::RecordWriter writer(path, options);
    std::uint64_t written = 0;
    while (written < bytes_per_file) {
      const std::string record = generated_record(index++, spec.mean_record_bytes);
      writer.write(record);
      written += record.size();
    }
    writer.close();
    paths.push_back(path);
  }
  return paths;
}

std::vector<std::string> convert_fashion_mnist(const std::string& idx_directory,
                                               const std::string& directory, int files,
                                               std::uint32_t records_per_chunk,
                                               data::Compression compression) {
  const fs::path idx(idx_directory);
  const std::string images = (idx / "train-images-idx3-ubyte.gz").string();
  const std::string labels = (idx / "train-labels-idx1-ubyte.gz").string();
  for (const auto& path : {images, labels}) {
    if (!fs::exists(path)) {
      throw InvalidArgument("Fashion-MNIST file " + path +
                            " is missing: install it (apt-get install dataset-fashion-mnist), "
                            "pass --data DIR with RecordIO files, or --sets generated");
    }
  }
  create_directory(directory);
  data::ConvertOptions options;
  options.records_per_chunk = records_per_chunk;
  options.compression = compression;
  options.files = files;
  const data::ConvertSummary summary = data::convert_idx_to_recordio(
      images, labels, (fs::path(directory) / "train").string(), options);
  std::vector<std::string> paths;
  for (const auto& file : summary.files) paths.push_back(file.path);
  return paths;
}

std::vector<std::string> list_record_files(const std::string& directory) {
  std::vector<std::string> paths;
  std::error_code error;
  for (fs::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    if (it->path().extension() == ".gwrio") paths.push_back(it->path().string());
  }
  if (error) throw InvalidArgument("cannot list " + directory + ": " + error.message());
  if (paths.empty()) {
    throw InvalidArgument(directory + " holds no .gwrio files: convert some with " +
                          "`gradwire-recordio convert` or leave out --data");
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

FileSetFacts describe_file_set(const std::vector<std::string>& files) {
  FileSetFacts facts;
  bool seen_none = false;
  bool seen_zstd = false;
  for (const auto& path : files) {
    // Headers only (no verification): damage is the loader's to report.
    const data::FileInspection file = data::inspect_record_file(path, /*verify=*/false);
    facts.file_bytes += file.file_bytes;
    facts.records += file.records;
    facts.chunks += file.chunks.size();
    for (const data::ChunkSummary& chunk : file.chunks) {
      (chunk.compression == data::Compression::kZstd ? seen_zstd : seen_none) = true;
    }
  }
  facts.compression = seen_none && seen_zstd ? "mixed" : seen_zstd ? "zstd" : "none";
  return facts;
}

std::vector<ByteRange> raw_read_share(const std::vector<std::uint64_t>& sizes, int rank,
                                      int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks) {
    throw InvalidArgument("raw_read_share: rank " + std::to_string(rank) + " of " +
                          std::to_string(ranks));
  }
  std::uint64_t total = 0;
  for (const auto size : sizes) total += size;
  // Exact in 128 bits would be nicer; totals here stay far below 2^64 / ranks.
  const std::uint64_t begin = total / ranks * rank + total % ranks * rank / ranks;
  const std::uint64_t end = total / ranks * (rank + 1) + total % ranks * (rank + 1) / ranks;
  std::vector<ByteRange> ranges;
  std::uint64_t file_start = 0;
  for (std::size_t f = 0; f < sizes.size(); ++f) {
    const std::uint64_t file_end = file_start + sizes[f];
    const std::uint64_t from = std::max(begin, file_start);
    const std::uint64_t to = std::min(end, file_end);
    if (from < to) ranges.push_back({f, from - file_start, to - from});
    file_start = file_end;
  }
  return ranges;
}

RawRead read_raw(const std::vector<std::string>& files, const std::vector<ByteRange>& ranges,
                 bool checksum, std::size_t buffer_bytes) {
  std::unique_ptr<char[]> buffer(new char[buffer_bytes]);
  RawRead result;
  for (const auto& range : ranges) {
    const std::string& path = files.at(range.file);
    FileDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0) {
      throw BackendError("cannot open " + path + " for the raw read: " + std::strerror(errno));
    }
    if (::lseek(file.fd, static_cast<off_t>(range.offset), SEEK_SET) < 0) {
      throw BackendError("cannot seek in " + path + ": " + std::strerror(errno));
    }
    std::uint64_t left = range.length;
    while (left > 0) {
      const ssize_t got =
          ::read(file.fd, buffer.get(), std::min<std::uint64_t>(left, buffer_bytes));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw BackendError("read of " + path + " failed: " + std::strerror(errno));
      if (got == 0) break;  // the file is shorter than it was
      left -= static_cast<std::uint64_t>(got);
      result.bytes += static_cast<std::uint64_t>(got);
      if (checksum) {
        result.crc ^= data::crc32_of(std::string_view(buffer.get(), static_cast<std::size_t>(got)));
      }
    }
  }
  return result;
}

std::vector<std::uint64_t> file_sizes(const std::vector<std::string>& files) {
  std::vector<std::uint64_t> sizes;
  for (const auto& path : files) {
    std::error_code error;
    const auto size = fs::file_size(path, error);
    if (error) throw InvalidArgument("cannot examine " + path + ": " + error.message());
    sizes.push_back(size);
  }
  return sizes;
}

}  // namespace gradwire::bench
