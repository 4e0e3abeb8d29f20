#include "gradwire/data/image_records.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "common/byte_order.h"
#include "gradwire/common/error.h"

namespace gradwire::data {

std::string encode_image_record(uint8_t label, uint16_t rows, uint16_t cols,
                                std::string_view pixels) {
  if (pixels.size() != size_t{rows} * cols) {
    throw InvalidArgument("gradwire: an image record of " + std::to_string(rows) + "x" +
                          std::to_string(cols) + " needs " + std::to_string(size_t{rows} * cols) +
                          " pixel bytes, got " + std::to_string(pixels.size()));
  }
  std::string record;
  record.reserve(kImageRecordHeaderSize + pixels.size());
  put_le<uint8_t>(record, kImageRecordVersion);
  put_le<uint8_t>(record, label);
  put_le<uint16_t>(record, rows);
  put_le<uint16_t>(record, cols);
  record.append(pixels);
  return record;
}

ImageRecord decode_image_record(std::string_view record) {
  if (record.size() < kImageRecordHeaderSize ||
      static_cast<uint8_t>(record[0]) != kImageRecordVersion) {
    throw InvalidArgument("gradwire: not an image record (" + std::to_string(record.size()) +
                          " bytes, version byte " +
                          (record.empty() ? std::string("missing")
                                          : std::to_string(static_cast<uint8_t>(record[0]))) +
                          "); was the file written by `gradwire-recordio convert`?");
  }
  ImageRecord image;
  image.label = static_cast<uint8_t>(record[1]);
  image.rows = get_le<uint16_t>(record, 2);
  image.cols = get_le<uint16_t>(record, 4);
  image.pixels = record.substr(kImageRecordHeaderSize);
  if (image.pixels.size() != size_t{image.rows} * image.cols) {
    throw InvalidArgument("gradwire: image record says " + std::to_string(image.rows) + "x" +
                          std::to_string(image.cols) + " but holds " +
                          std::to_string(image.pixels.size()) + " pixel bytes");
  }
  return image;
}

size_t IdxArray::item_size() const {
  size_t size = 1;
  for (size_t i = 1; i < dims.size(); ++i) size *= dims[i];
  return size;
}

IdxArray parse_idx(std::string bytes, const std::string& name) {
  auto fail = [&](const std::string& problem) {
    return InvalidArgument("gradwire: " + name + " is not a usable IDX file: " + problem +
                           ". Expected the MNIST layout (e.g. train-images-idx3-ubyte[.gz]).");
  };
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0) throw fail("no IDX magic");
  if (static_cast<uint8_t>(bytes[2]) != 0x08) {
    throw fail("element type " + std::to_string(static_cast<uint8_t>(bytes[2])) +
               " is not unsigned byte (0x08)");
  }
  const size_t rank = static_cast<uint8_t>(bytes[3]);
  if (rank == 0 || bytes.size() < 4 + 4 * rank) throw fail("header cut short");
  IdxArray array;
  size_t elements = 1;
  for (size_t i = 0; i < rank; ++i) {
    array.dims.push_back(get_be32(bytes, 4 + 4 * i));
    elements *= array.dims.back();
  }
  const size_t header = 4 + 4 * rank;
  if (bytes.size() - header != elements) {
    throw fail("dimensions promise " + std::to_string(elements) + " bytes, file holds " +
               std::to_string(bytes.size() - header));
  }
  array.data = bytes.substr(header);
  return array;
}

std::string read_file_maybe_gzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    throw InvalidArgument("gradwire: cannot open " + path + ": " + std::strerror(errno));
  }
  std::string bytes;
  char buffer[1 << 16];
  while (true) {
    const int got = gzread(file, buffer, sizeof(buffer));
    if (got < 0) {
      int code = 0;
      const std::string message = gzerror(file, &code);
      gzclose(file);
      throw InvalidArgument("gradwire: reading " + path + " failed: " + message +
                            " (damaged gzip data?)");
    }
    if (got == 0) break;
    bytes.append(buffer, static_cast<size_t>(got));
  }
  gzclose(file);
  return bytes;
}

}  // namespace gradwire::data
