// Internal: the timeline's compact record, in a thread's chunk and in a process file (pure).
//
// Note [timeline records]: a thread builds its event as an Event (timeline_event.h, on its stack
// or in a Span) and appends it to its chunk as a record: a 48-byte head, one 16-byte slot per arg
// and the event's text (name, then string args), padded to 8 bytes, about 110 bytes where the
// Event takes 384. The writer thread writes the chunks' bytes to the process file as they are:
// nothing is formatted while the job runs. Categories and arg keys are recorded as their
// addresses (they are literals, timeline.h); before the first record that uses an address the
// writer writes a string record ('S') that defines it. `gradwire-trace merge` (timeline_merge.h)
// decodes the file and writes the Chrome trace's JSON. A process file is the magic kFileMagic,
// then records; the process's stop() ends it with a record 'Z'. A process killed mid-write leaves
// a last record cut short, which decoding drops and counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "common/timeline_event.h"

namespace gradwire::timeline {

// The extension of a process file's name (timeline::process_file).
inline constexpr std::string_view kProcessFileExtension{".gwtl"};

// The first bytes of a process file.
inline constexpr std::string_view kFileMagic{"GWTLv1\n\0", 8};

// A record's head; its phase is an Event's, or 'S' (a string: `id` the address it defines, the
// text its bytes) or 'Z' (the end of the file).
struct RecordHead {
  uint16_t size;  // of the whole record, a multiple of 8
  char phase;
  char scope;
  uint8_t arg_count;
  uint8_t begin_args;
  uint8_t name_size;
  uint8_t text_used;  // bytes of text after the args: the name, then string args
  int32_t tid;
  uint32_t kinds;  // arg i's Arg::Kind in bits [3i, 3i + 3)
  int64_t ts_ns;
  int64_t dur_ns;
  uint64_t id;
  uint64_t category;  // the category's address, 0 for none
};

// One arg: its key's address and its value (kText: text offset | size << 8).
struct RecordArg {
  uint64_t key;
  uint64_t value;
};

// The most bytes one record takes.
inline constexpr size_t kMaxRecordBytes =
    sizeof(RecordHead) + kMaxArgs * sizeof(RecordArg) + kTextBytes + 8;

// The bytes of `event`'s record.
inline size_t record_size(const Event& event) {
  const size_t size = sizeof(RecordHead) + event.arg_count * sizeof(RecordArg) + event.text_used;
  return (size + 7) & ~size_t{7};
}

// Writes `event`'s record at `out` (8-aligned, record_size(event) bytes of room).
void encode_record(unsigned char* out, const Event& event);

// Calls `each(address)` for every address in the records [begin, end) (whole records, as
// a chunk holds): their categories and keys.
template <typename Each>
void for_each_address(const unsigned char* begin, const unsigned char* end, Each&& each);

// The string record defining `address` as `text` (cut at kTextBytes / 2 bytes), appended to `out`.
void append_string_record(std::vector<unsigned char>& out, uint64_t address, const char* text);

// The end record, appended to `out`.
void append_end_record(std::vector<unsigned char>& out);

// A process file decoded: its events as Chrome trace JSON objects (an 'A' record as its "b" and
// "e" objects), metadata included.
struct DecodedFile {
  std::vector<nlohmann::json> events;
  bool closed = false;  // ended with its 'Z' record
  size_t dropped = 0;   // 1 when it ends in a cut or malformed record (the rest is not read)
};

// Decodes a process file's bytes (starting with kFileMagic) with "pid": `pid`. Never throws for
// bad content: decoding stops at the first record that is cut or malformed, and counts it.
DecodedFile decode_process_file(std::string_view bytes, int64_t pid = 0);

// How decoding a process file ended: DecodedFile without its events.
struct DecodeEnd {
  bool closed = false;
  size_t dropped = 0;
};

// Decodes a process file's bytes as decode_process_file does, handing each event (an 'A' record
// as one Event, metadata included) to `each` instead of building JSON: the streaming merge's way.
DecodeEnd for_each_event(std::string_view bytes, const std::function<void(const Event&)>& each);

// The text of `event`'s arg `key` (a kText arg), empty when it has none.
std::string_view text_arg(const Event& event, std::string_view key);

// Whether `bytes` start as a process file does.
inline bool is_process_file(std::string_view bytes) {
  return bytes.substr(0, kFileMagic.size()) == kFileMagic;
}

// --- Template definitions --------------------------------------------------------------------

template <typename Each>
void for_each_address(const unsigned char* begin, const unsigned char* end, Each&& each) {
  for (const unsigned char* at = begin; at + sizeof(RecordHead) <= end;) {
    RecordHead head;
    std::memcpy(&head, at, sizeof head);
    if (head.size < sizeof(RecordHead)) return;
    if (head.category != 0) each(head.category);
    for (uint8_t i = 0; i < head.arg_count; ++i) {
      RecordArg arg;
      std::memcpy(&arg, at + sizeof(RecordHead) + i * sizeof(RecordArg), sizeof arg);
      if (arg.key != 0) each(arg.key);
    }
    at += head.size;
  }
}

}  // namespace gradwire::timeline
