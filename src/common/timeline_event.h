// Internal: the timeline's event being built and its JSON (pure). An Event is a fixed-size,
// trivially copyable struct that a thread fills without allocating (gradwire/common/timeline.h)
// and appends to its buffer as a compact record (timeline_record.h); merge decodes the records
// into Events again and writes them in the Chrome trace event format.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "gradwire/common/timeline.h"

namespace gradwire::timeline {

struct ArgSlot {
  const char* key;
  union {
    int64_t int_value;
    uint64_t uint_value;
    double double_value;
  };
  Arg::Kind kind;
  uint8_t text_offset;  // kText: where its bytes are in Event::text
  uint8_t text_size;
};

struct Event {
  int64_t ts_ns;
  int64_t dur_ns;  // 'X'
  uint64_t id;     // 'b', 'e', 'A'
  int32_t tid;
  // 'X', 'i', 'C', 'b', 'e', 'M', or 'A': an async span recorded whole (timeline::async_span),
  // one buffered event written as its "b" at ts_ns (args [0, begin_args)) and its "e" at
  // ts_ns + dur_ns (the args after).
  char phase;
  char scope;  // 'i': 't', 'p', 'g'
  uint8_t arg_count;
  uint8_t text_used;  // bytes of `text` taken: the name first, then string args
  const char* category;
  uint8_t name_size;
  uint8_t begin_args;  // 'A'

  ArgSlot args[kMaxArgs];
  char text[kTextBytes];

  // Starts an event: its phase, name (copied, cut to what fits) and category.
  void reset(char phase, std::string_view name, const char* category);
  // Copies `arg` in (its text cut to what is left; dropped beyond kMaxArgs).
  void add(const Arg& arg);
  void add(Args args) {
    for (const Arg& arg : args) add(arg);
  }
  std::string_view name() const { return {text, name_size}; }
};

// The most bytes write_event_json takes for `event` (every string byte counted as escaped).
size_t event_json_bound(const Event& event);

// Writes the event as one JSON object (no newline) with "pid": `pid` at `out`, which has room for
// event_json_bound(event) bytes; returns the end. As append_event_json. An 'A' event is written
// as two lines: its "b" object, a newline and a comma, then its "e" object.
char* write_event_json(char* out, const Event& event, int64_t pid);

// Appends the event as one JSON object (no newline) with "pid": `pid`; ts and dur in
// microseconds with three decimals.
void append_event_json(std::string& out, const Event& event, int64_t pid);

}  // namespace gradwire::timeline
