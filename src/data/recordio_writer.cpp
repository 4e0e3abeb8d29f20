#include "gradwire/data/recordio_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "gradwire/common/error.h"
#include "gradwire/common/files.h"
#include "recordio_format.h"

namespace gradwire::data {

struct RecordWriter::Open {
  UniqueFd fd;
  ChunkBuilder pending;
  std::vector<IndexEntry> index;
};

RecordWriter::RecordWriter(std::string path, RecordWriterOptions options)
    : path_(std::move(path)), options_(options) {
  if (options_.chunk_bytes == 0) {
    throw InvalidArgument("gradwire: RecordWriterOptions::chunk_bytes must be positive (writing " +
                          path_ + ")");
  }
  UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    throw InvalidArgument("gradwire: cannot create RecordIO file " + path_ + ": " +
                          errno_text(errno) + ". Check that the directory exists and is writable.");
  }
  open_ = std::make_unique<Open>();
  open_->fd = std::move(fd);
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
  if (!write_fully(open_->fd.get(), bytes.data(), bytes.size())) {
    throw BackendError("gradwire: writing " + std::to_string(bytes.size()) + " bytes at offset " +
                       std::to_string(offset_) + " of " + path_ + " failed: " + errno_text(errno) +
                       ". Check free disk space.");
  }
  offset_ += bytes.size();
}

void RecordWriter::write(std::string_view record) {
  if (!open_) {
    throw InvalidArgument("gradwire: RecordWriter::write after close() on " + path_);
  }
  open_->pending.add(record);
  ++records_;
  if (open_->pending.body_size() >= options_.chunk_bytes ||
      (options_.records_per_chunk != 0 &&
       open_->pending.record_count() >= options_.records_per_chunk)) {
    flush_chunk();
  }
}

void RecordWriter::flush_chunk() {
  if (!open_ || open_->pending.empty()) return;
  open_->index.push_back(IndexEntry{offset_, static_cast<uint32_t>(open_->pending.record_count())});
  append(open_->pending.encode(options_.compression, options_.zstd_level));
  open_->pending.clear();
}

RecordFileSummary RecordWriter::close() {
  if (!open_) return summary_;
  flush_chunk();
  const std::string index = encode_index(open_->index);
  Footer footer;
  footer.index_offset = offset_;
  footer.chunk_count = open_->index.size();
  footer.record_count = records_;
  footer.index_crc = crc32_of(index);
  append(index);
  append(encode_footer(footer));
  const std::unique_ptr<Open> closing = std::move(open_);
  if (::close(closing->fd.release()) != 0) {
    throw BackendError("gradwire: closing RecordIO file " + path_ +
                       " failed: " + errno_text(errno) + ". Check free disk space.");
  }
  summary_ = RecordFileSummary{path_, closing->index.size(), records_, offset_};
  return summary_;
}

}  // namespace gradwire::data
