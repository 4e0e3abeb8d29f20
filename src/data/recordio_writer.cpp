#include "gradwire/data/recordio_writer.h"

#include <cerrno>
#include <cstring>

#include "gradwire/common/error.h"

namespace gradwire::data {

RecordWriter::RecordWriter(std::string path, RecordWriterOptions options)
    : path_(std::move(path)), options_(options) {
  if (options_.chunk_bytes == 0) {
    throw InvalidArgument("gradwire: RecordWriterOptions::chunk_bytes must be positive (writing " +
                          path_ + ")");
  }
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) {
    throw InvalidArgument("gradwire: cannot create RecordIO file " + path_ + ": " +
                          std::strerror(errno) +
                          ". Check that the directory exists and is writable.");
  }
  append(encode_file_header());
}

RecordWriter::~RecordWriter() {
  try {
    close();
  } catch (const std::exception&) {
    // Destructors do not throw; close() explicitly to see the error.
  }
}

void RecordWriter::append(std::string_view bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    throw BackendError("gradwire: writing " + std::to_string(bytes.size()) + " bytes at offset " +
                       std::to_string(offset_) + " of " + path_ +
                       " failed: " + std::strerror(errno) + ". Check free disk space.");
  }
  offset_ += bytes.size();
}

void RecordWriter::write(std::string_view record) {
  if (file_ == nullptr) {
    throw InvalidArgument("gradwire: RecordWriter::write after close() on " + path_);
  }
  pending_.add(record);
  ++records_;
  if (pending_.body_size() >= options_.chunk_bytes ||
      (options_.records_per_chunk != 0 && pending_.record_count() >= options_.records_per_chunk)) {
    flush_chunk();
  }
}

void RecordWriter::flush_chunk() {
  if (file_ == nullptr || pending_.empty()) return;
  index_.push_back(IndexEntry{offset_, static_cast<uint32_t>(pending_.record_count())});
  append(pending_.encode(options_.compression, options_.zstd_level));
  pending_.clear();
}

RecordFileSummary RecordWriter::close() {
  if (file_ == nullptr) return summary_;
  flush_chunk();
  const std::string index = encode_index(index_);
  Footer footer;
  footer.index_offset = offset_;
  footer.chunk_count = index_.size();
  footer.record_count = records_;
  footer.index_crc = crc32_of(index);
  append(index);
  append(encode_footer(footer));
  std::FILE* file = file_;
  file_ = nullptr;
  if (std::fclose(file) != 0) {
    throw BackendError("gradwire: closing RecordIO file " + path_ +
                       " failed: " + std::strerror(errno) + ". Check free disk space.");
  }
  summary_ = RecordFileSummary{path_, index_.size(), records_, offset_};
  return summary_;
}

}  // namespace gradwire::data
