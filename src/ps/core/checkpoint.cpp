// Checkpoint files: writing atomically, reading with every check before trusting a size
// (checkpoint.h, docs/formats/ps-checkpoint.md).
#include "ps/core/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "common/byte_order.h"
#include "common/process.h"
#include "gradwire/common/error.h"
#include "gradwire/common/files.h"
#include "ps/core/checkpoint_header.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "checkpoint files hold little-endian bytes; this code copies memory as is");

namespace gradwire::ps {
namespace fmt = checkpoint_format;
namespace {

constexpr size_t kIoChunk = size_t{1} << 24;

uint32_t crc_update(uint32_t crc, const void* data, size_t size) {
  return static_cast<uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), size));
}

// ---- reading ----

// Reads from a file, accumulating the CRC-32 of everything read.
class Reader {
 public:
  Reader(std::string path, int fd, int64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  int64_t size() const { return size_; }
  int64_t position() const { return position_; }
  uint32_t crc() const { return crc_; }
  void read(void* data, int64_t size) {
    char* bytes = static_cast<char*>(data);
    while (size > 0) {
      const ssize_t got =
          ::read(fd_, bytes, static_cast<size_t>(std::min<int64_t>(size, kIoChunk)));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        throw Error("gradwire: cannot read checkpoint '" + path_ + "' at byte " +
                    std::to_string(position_) + ": " + errno_text(errno));
      }
      if (got == 0) {
        throw fmt::FormatError(position_, "the file ends early (it shrank while being read)", true);
      }
      crc_ = crc_update(crc_, bytes, static_cast<size_t>(got));
      bytes += got;
      size -= got;
      position_ += got;
    }
  }
  // Continues at byte `position`, as if the CRC of the bytes before it were `crc`.
  void seek(int64_t position, uint32_t crc) {
    if (::lseek(fd_, position, SEEK_SET) != position) {
      throw Error("gradwire: cannot seek in checkpoint '" + path_ + "' to byte " +
                  std::to_string(position) + ": " + errno_text(errno));
    }
    position_ = position;
    crc_ = crc;
  }
  // Reads through byte `end`, for the CRC only.
  void skip_to(int64_t end) {
    std::vector<char> buffer(std::min<int64_t>(end - position_, kIoChunk) + 1);
    while (position_ < end) read(buffer.data(), std::min<int64_t>(end - position_, kIoChunk));
  }

 private:
  std::string path_;
  int fd_;
  int64_t size_;
  int64_t position_ = 0;
  uint32_t crc_ = static_cast<uint32_t>(crc32_z(0L, Z_NULL, 0));
};

// The little-endian u32 in the 4 trailer bytes.
uint32_t stored_crc(const unsigned char* trailer) {
  return get_le<uint32_t>(std::string_view(reinterpret_cast<const char*>(trailer), 4), 0);
}

std::string hex32(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

struct CrcCheck {
  bool ok = false;
  uint32_t stored = 0;
  uint32_t computed = 0;
};

// Reads on from the reader's position to the trailer and compares the CRC-32 of everything
// before it (the reader's running CRC) with the trailer's.
CrcCheck crc_to_trailer(Reader& reader, int64_t size) {
  reader.skip_to(size - fmt::kTrailerBytes);
  CrcCheck check;
  check.computed = reader.crc();
  unsigned char trailer[4];
  reader.read(trailer, 4);
  check.stored = stored_crc(trailer);
  check.ok = check.stored == check.computed;
  return check;
}

// The CRC-32 of the first size - 4 bytes against the trailer, reading the file from the start.
CrcCheck check_crc(const std::string& path, int64_t size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    throw Error("gradwire: cannot open checkpoint '" + path + "': " + errno_text(errno));
  }
  Reader reader(path, fd.get(), size);
  return crc_to_trailer(reader, size);
}

CorruptDataError crc_error(const std::string& path, int64_t size, const CrcCheck& crc,
                           const std::string& extra) {
  return CorruptDataError(
      "gradwire: checkpoint '" + path + "' is corrupt: CRC-32 mismatch at byte " +
      std::to_string(size - fmt::kTrailerBytes) + " (stored " + hex32(crc.stored) + ", computed " +
      hex32(crc.computed) + " over bytes 0.." + std::to_string(size - fmt::kTrailerBytes - 1) +
      ")" + extra + ". Restore the file from a good copy, or delete it to start the table afresh.");
}

// A layout problem in a file whose CRC-32 matches: intact, but not one this code can read.
CorruptDataError invalid_error(const std::string& path, const fmt::FormatError& problem) {
  return CorruptDataError("gradwire: checkpoint '" + path + "' is invalid at byte " +
                          std::to_string(problem.offset()) + ": " + problem.what() +
                          ". Its CRC-32 matches, so it was written by another program or "
                          "version of gradwire; read it with that version or delete it.");
}

// Turns a problem of the fixed fields (found before the CRC was checked) into the error to
// throw: the CRC tells corruption (or truncation) from a file that is intact but not one this
// code can read.
[[noreturn]] void report_problem(const std::string& path, int64_t size,
                                 const fmt::FormatError& problem) {
  const std::string where = "at byte " + std::to_string(problem.offset()) + ": " + problem.what();
  CrcCheck crc;
  try {
    crc = check_crc(path, size);
  } catch (const fmt::FormatError&) {
    crc.ok = false;  // the file shrank meanwhile
  }
  if (crc.ok) throw invalid_error(path, problem);
  if (problem.truncated()) {
    throw CorruptDataError("gradwire: checkpoint '" + path + "' is truncated (" +
                           std::to_string(size) + " bytes; " + where +
                           "; its CRC-32 does not match either). Restore the file " +
                           "from a good copy, or delete it to start the table afresh.");
  }
  throw crc_error(path, size, crc, "; the first problem found is " + where);
}

// The fixed fields: the magic, the version and the header length H, bounded by the file's size
// and kMaxHeaderBytes before anything is allocated for the header. Returns H.
int64_t read_preamble(Reader& reader) {
  const int64_t size = reader.size();
  unsigned char preamble[fmt::kHeaderOffset];
  reader.read(preamble, fmt::kHeaderOffset);
  const std::string_view preamble_bytes(reinterpret_cast<const char*>(preamble), sizeof(preamble));
  if (std::memcmp(preamble, fmt::kMagic, sizeof(fmt::kMagic)) != 0) {
    throw fmt::FormatError(0,
                           "bad magic: the file does not start with GWPSCKPT, so it is not a "
                           "gradwire parameter-server checkpoint");
  }
  const uint64_t version = get_le<uint32_t>(preamble_bytes, fmt::kVersionOffset);
  if (version != fmt::kVersion) {
    throw fmt::FormatError(fmt::kVersionOffset, "unknown version " + std::to_string(version) +
                                                    "; this gradwire reads version " +
                                                    std::to_string(fmt::kVersion));
  }
  const uint64_t header_length = get_le<uint64_t>(preamble_bytes, fmt::kHeaderLengthOffset);
  if (header_length > static_cast<uint64_t>(size - fmt::kMinFileBytes)) {
    throw fmt::FormatError(fmt::kHeaderLengthOffset,
                           "the header length " + std::to_string(header_length) +
                               " runs past the end of the file (" + std::to_string(size) +
                               " bytes)",
                           /*truncated=*/true);
  }
  if (header_length > static_cast<uint64_t>(fmt::kMaxHeaderBytes)) {
    throw fmt::FormatError(fmt::kHeaderLengthOffset,
                           "the header length " + std::to_string(header_length) +
                               " is above the limit of " + std::to_string(fmt::kMaxHeaderBytes) +
                               " bytes");
  }
  return static_cast<int64_t>(header_length);
}

// Note [header before CRC]: the header decides every allocation and read after it, so its bytes
// are parsed only once the file's CRC-32 (the format's only checksum, over the whole file)
// matched. A first pass reads the header and streams the rest of the file through the CRC; a
// second reads the tensors straight into their buffers, checking the CRC again in case the
// file changed in between. The data region is read twice, the second time usually from the page
// cache. A damaged header is therefore reported as a CRC mismatch, never as what a parse of it
// found.
ShardSnapshot read_layout(const std::string& path, Reader& reader) {
  const int64_t size = reader.size();
  int64_t header_length = 0;
  try {
    header_length = read_preamble(reader);
  } catch (const fmt::FormatError& problem) {
    report_problem(path, size, problem);
  }
  std::string header_text(static_cast<size_t>(header_length), '\0');
  reader.read(header_text.data(), header_length);
  const uint32_t crc_through_header = reader.crc();
  const CrcCheck crc = crc_to_trailer(reader, size);
  if (!crc.ok) {
    throw crc_error(path, size, crc,
                    "; the header was not parsed, since it may be damaged (a file cut short "
                    "fails this check too)");
  }

  fmt::Header header;
  const int64_t data_offset = fmt::kHeaderOffset + header_length;
  try {
    header = fmt::decode_header(header_text, size);
    const int64_t expected = fmt::kMinFileBytes + header_length + header.data_bytes;
    if (expected != size) {
      throw fmt::FormatError(expected - fmt::kTrailerBytes,
                             "sizes disagree: the header declares a file of " +
                                 std::to_string(expected) + " bytes, the file has " +
                                 std::to_string(size));
    }
  } catch (const fmt::FormatError& problem) {
    throw invalid_error(path, problem);
  }
  ShardSnapshot snapshot;
  snapshot.config = header.config;
  snapshot.server_index = header.server_index;
  snapshot.num_servers = header.num_servers;
  snapshot.step = header.step;
  reader.seek(data_offset, crc_through_header);
  for (const fmt::TensorEntry& entry : header.tensors) {
    at::Tensor tensor = at::empty(entry.shape, entry.dtype);  // bounded by the file's size
    reader.read(tensor.data_ptr(), entry.length);
    if (entry.name == "weights") {
      snapshot.weights = tensor;
    } else {
      snapshot.optimizer_state.emplace_back(entry.name, tensor);
    }
  }
  if (reader.crc() != crc.stored) {
    throw CorruptDataError("gradwire: checkpoint '" + path +
                           "' changed while it was being read: its bytes 0.." +
                           std::to_string(size - fmt::kTrailerBytes - 1) +
                           " no longer match the CRC-32 they had a moment before. Make sure "
                           "no other program writes checkpoints in place, then read it again.");
  }
  return snapshot;
}

// What the CRC cannot tell: the content agrees with itself.
void check_content(const std::string& path, const ShardSnapshot& snapshot) {
  const std::string prefix = "gradwire: checkpoint '" + path + "' (header at byte " +
                             std::to_string(fmt::kHeaderOffset) + ") ";
  try {
    validate(snapshot.config);
  } catch (const InvalidArgument& error) {
    throw CorruptDataError(prefix + "holds a table config that does not validate: " + error.what());
  }
  if (snapshot.num_servers < 1 || snapshot.server_index < 0 ||
      snapshot.server_index >= snapshot.num_servers || snapshot.step < 0) {
    throw CorruptDataError(prefix + "holds server_index " + std::to_string(snapshot.server_index) +
                           ", num_servers " + std::to_string(snapshot.num_servers) + ", step " +
                           std::to_string(snapshot.step) + ", which do not fit together");
  }
  const int64_t rows =
      rows_on_server(snapshot.config.num_rows, snapshot.server_index, snapshot.num_servers);
  const at::Tensor& weights = snapshot.weights;
  if (weights.scalar_type() != at::kFloat || weights.dim() != 2 || weights.size(0) != rows ||
      weights.size(1) != snapshot.config.dim) {
    throw CorruptDataError(prefix + "holds weights of " + std::string(weights.toString()) + " " +
                           c10::str(weights.sizes()) + "; " + describe(snapshot.config) +
                           " on server " + std::to_string(snapshot.server_index) + " of " +
                           std::to_string(snapshot.num_servers) + " needs float32 [" +
                           std::to_string(rows) + ", " + std::to_string(snapshot.config.dim) + "]");
  }
}

}  // namespace

std::string checkpoint_file_name(const std::string& table, int server_index, int num_servers) {
  return table + ".shard" + std::to_string(server_index) + "of" + std::to_string(num_servers) +
         ".gwps";
}

ShardSnapshot read_checkpoint(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    throw Error("gradwire: cannot open checkpoint '" + path + "': " + errno_text(errno));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    throw Error("gradwire: checkpoint '" + path + "' is not a regular file");
  }
  const int64_t size = static_cast<int64_t>(info.st_size);
  if (size < fmt::kMinFileBytes) {
    throw CorruptDataError(
        "gradwire: checkpoint '" + path + "' is truncated at byte " + std::to_string(size) +
        ": it has " + std::to_string(size) + " bytes, fewer than the " +
        std::to_string(fmt::kMinFileBytes) +
        " of the smallest checkpoint. Restore it from a good copy or delete it.");
  }
  Reader reader(path, fd.get(), size);
  ShardSnapshot snapshot;
  try {
    snapshot = read_layout(path, reader);
  } catch (const fmt::FormatError& problem) {
    report_problem(path, size, problem);  // the file shrank while being read
  }
  check_content(path, snapshot);
  return snapshot;
}

void write_checkpoint(const std::string& path, const ShardSnapshot& snapshot) {
  // Everything that can be wrong with the snapshot is found before a file is touched.
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  tensors.emplace_back("weights", snapshot.weights);
  for (const auto& entry : snapshot.optimizer_state) tensors.push_back(entry);
  fmt::Header header;
  header.config = snapshot.config;
  header.server_index = snapshot.server_index;
  header.num_servers = snapshot.num_servers;
  header.step = snapshot.step;
  for (auto& [name, tensor] : tensors) {
    if (!tensor.defined()) {
      throw InvalidArgument("gradwire: cannot write checkpoint '" + path + "': tensor '" + name +
                            "' is undefined");
    }
    tensor = tensor.to(at::kCPU).contiguous();
    fmt::TensorEntry entry;
    entry.name = name;
    entry.dtype = tensor.scalar_type();
    fmt::dtype_name(entry.dtype);  // InvalidArgument for a dtype a checkpoint cannot hold
    entry.shape = tensor.sizes().vec();
    entry.offset = header.data_bytes;
    entry.length = static_cast<int64_t>(tensor.nbytes());
    header.data_bytes += entry.length;
    header.tensors.push_back(entry);
  }
  const std::string header_text = fmt::encode_header(header);
  GRADWIRE_CHECK_LE(static_cast<int64_t>(header_text.size()), fmt::kMaxHeaderBytes);
  std::string preamble(fmt::kMagic, sizeof(fmt::kMagic));
  put_le<uint32_t>(preamble, fmt::kVersion);
  put_le<uint64_t>(preamble, header_text.size());

  AtomicFileWriter file(path, "checkpoint");
  uint32_t crc = static_cast<uint32_t>(crc32_z(0L, Z_NULL, 0));
  const auto put = [&](const void* data, size_t size) {
    file.write(data, size);
    crc = crc_update(crc, data, size);
  };
  put(preamble.data(), preamble.size());
  put(header_text.data(), header_text.size());
  for (const auto& entry : tensors) put(entry.second.data_ptr(), entry.second.nbytes());
  std::string trailer;
  put_le<uint32_t>(trailer, crc);
  file.write(trailer);
  file.commit();
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::exists(dir, error) && !error) return {};
  if (error || !fs::is_directory(dir, error)) {
    throw Error("gradwire: cannot list checkpoints in '" + dir +
                "': " + (error ? error.message() : std::string("not a directory")));
  }
  std::vector<std::string> paths;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const fs::path& entry = it->path();
    if (entry.extension() == ".gwps" && it->is_regular_file(error)) {
      paths.push_back(entry.string());
    }
  }
  if (error) {
    throw Error("gradwire: cannot list checkpoints in '" + dir + "': " + error.message());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

std::vector<std::string> remove_stale_checkpoint_temps(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::exists(dir, error) && !error) return {};
  std::vector<std::string> stale;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::optional<TempFileWriter> writer =
        temp_file_writer_here(it->path().filename().string());
    if (writer && fs::path(writer->target).extension() == ".gwps" && process_gone(writer->pid)) {
      stale.push_back(it->path().string());
    }
  }
  if (error) {
    throw Error("gradwire: cannot look for stale checkpoint files in '" + dir +
                "': " + error.message());
  }
  std::sort(stale.begin(), stale.end());
  std::vector<std::string> removed;
  for (const std::string& path : stale) {
    if (::unlink(path.c_str()) == 0) {
      removed.push_back(path);
    } else if (errno != ENOENT) {
      throw Error("gradwire: cannot remove the stale temporary checkpoint file '" + path +
                  "' (its writer is gone): " + errno_text(errno) +
                  ". Check the directory's permissions, or remove the file by hand.");
    }
  }
  return removed;
}

}  // namespace gradwire::ps
