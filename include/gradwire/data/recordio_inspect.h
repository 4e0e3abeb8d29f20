// Describing and checking whole RecordIO files: what `gradwire-recordio inspect` and `verify`
// print, and the checksum they verify. Blocks on file I/O; thread safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gradwire/data/recordio_reader.h"
#include "gradwire/data/recordio_writer.h"  // Compression

namespace gradwire::data {

struct ChunkSummary {
  uint64_t offset = 0;
  uint32_t records = 0;
  Compression compression = Compression::kNone;
  uint64_t body_bytes = 0;    // before compression
  uint64_t stored_bytes = 0;  // in the file
};

struct FileInspection {
  std::string path;
  uint64_t file_bytes = 0;
  uint64_t records = 0;
  std::vector<ChunkSummary> chunks;  // chunks whose header could be read
  // Everything found wrong: open damage (footer, index, truncation), unreadable headers, and with
  // verify also CRC mismatches, undecodable bodies and bytes between chunks that no chunk owns.
  std::vector<ChunkDamage> damages;
};

// Reads the footer, the index and every chunk header. With `verify`, also reads every chunk body
// and checks its CRC and framing. Damage is reported in the result, never thrown; a file that
// cannot be opened at all throws InvalidArgument.
FileInspection inspect_record_file(const std::string& path, bool verify);

// The RecordIO checksum of `bytes`: CRC-32C (Castagnoli), with the SSE4.2 instruction where the
// CPU has it (docs/formats/recordio.md, "Checksums"). Thread safe.
uint32_t crc32_of(std::string_view bytes);

}  // namespace gradwire::data
