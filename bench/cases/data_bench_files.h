// The file sets `gradwire-bench data` reads, and the raw read it compares the loader with.
//
// - Fashion-MNIST converted with gradwire's IDX conversion, or a directory's RecordIO files as
//   they are (--data DIR).
// - A generated set: records of pseudo-random sizes and contents that zstd compresses about 2:1
//   (every byte one of 16 letters), a deterministic function of the record number.
// - The raw read: the same files read with plain read() into one buffer, split between ranks by
//   byte ranges of the files laid end to end. It is the I/O limit when the files are in the page
//   cache (read them once before timing). With a checksum it also runs the RecordIO CRC-32 over
//   every byte: the floor of any reader that verifies what it reads.
//
// Writing and reading block on file I/O; failures throw InvalidArgument (missing input) or
// BackendError (a read failed), naming the path. Everything here is thread compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cases/data_bench_settings.h"
#include "gradwire/data/recordio_writer.h"  // Compression

namespace gradwire::bench {

// Pure: the size of generated record `index`, uniform in [mean/2, 3*mean/2] (at least 1).
std::uint64_t generated_record_size(std::uint64_t index, std::uint64_t mean_bytes);
// Pure: the contents of generated record `index` (generated_record_size(index, mean) bytes).
std::string generated_record(std::uint64_t index, std::uint64_t mean_bytes);

// Writes the generated set into `directory` (created): spec.files files "generated-0000F-of-
// 0000N.gwrio", each with an equal share of spec.bytes of record payload. Returns the paths.
std::vector<std::string> write_generated_set(const std::string& directory,
                                             const GeneratedSpec& spec,
                                             data::Compression compression);

// Converts the Fashion-MNIST training images and labels in `idx_directory` into `files` files
// "train-0000F-of-0000N.gwrio" in `directory` (created). Returns the paths.
std::vector<std::string> convert_fashion_mnist(const std::string& idx_directory,
                                               const std::string& directory, int files,
                                               std::uint32_t records_per_chunk,
                                               data::Compression compression);

// The *.gwrio files of `directory`, sorted by name. Throws InvalidArgument when there are none.
std::vector<std::string> list_record_files(const std::string& directory);

// What the files hold, from their indexes and chunk headers.
struct FileSetFacts {
  std::uint64_t file_bytes = 0;
  std::uint64_t records = 0;
  std::uint64_t chunks = 0;
  std::string compression;  // "none", "zstd" or "mixed" (from each chunk's header)
};
FileSetFacts describe_file_set(const std::vector<std::string>& files);

// A byte range of one file.
struct ByteRange {
  std::size_t file = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool operator==(const ByteRange& other) const {
    return file == other.file && offset == other.offset && length == other.length;
  }
};

// Pure: rank `rank`'s share of the files of `sizes` laid end to end: bytes [T*rank/ranks,
// T*(rank+1)/ranks) of the total T, as ranges of the files (empty ranges left out).
std::vector<ByteRange> raw_read_share(const std::vector<std::uint64_t>& sizes, int rank, int ranks);

struct RawRead {
  std::uint64_t bytes = 0;  // fewer than asked only when a file is shorter
  std::uint32_t crc = 0;    // with checksum: CRC-32 (data::crc32_of) of each buffer, XORed
};

// Reads `ranges` of `files` with read() into a buffer of `buffer_bytes`, sequentially; with
// `checksum` also computes the RecordIO CRC-32 of every buffer read (the least work a verifying
// reader does on top of the read). Throws BackendError naming the file when open or read fails.
RawRead read_raw(const std::vector<std::string>& files, const std::vector<ByteRange>& ranges,
                 bool checksum = false, std::size_t buffer_bytes = std::size_t{1} << 20);

// The sizes of `files` in bytes. Throws InvalidArgument naming a file that cannot be examined.
std::vector<std::uint64_t> file_sizes(const std::vector<std::string>& files);

}  // namespace gradwire::bench
