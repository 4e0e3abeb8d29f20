// The timeline's events as JSON lines (timeline_event.h).
#include "common/timeline_event.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>

namespace gradwire::timeline {

void Event::reset(char phase_, std::string_view name_, const char* category_) {
  ts_ns = 0;
  dur_ns = 0;
  id = 0;
  tid = 0;
  phase = phase_;
  scope = 't';
  arg_count = 0;
  category = category_;
  begin_args = 0;
  const size_t size = std::min(name_.size(), kTextBytes / 2);
  std::memcpy(text, name_.data(), size);
  name_size = static_cast<uint8_t>(size);
  text_used = static_cast<uint8_t>(size);
}

void Event::add(const Arg& arg) {
  if (arg_count == kMaxArgs) return;
  ArgSlot& slot = args[arg_count++];
  slot.key = arg.key;
  slot.kind = arg.kind;
  slot.uint_value = arg.uint_value;
  slot.text_offset = text_used;
  slot.text_size = 0;
  if (arg.kind == Arg::Kind::kText) {
    const size_t size = std::min(arg.text.size(), kTextBytes - text_used);
    std::memcpy(text + text_used, arg.text.data(), size);
    slot.text_size = static_cast<uint8_t>(size);
    text_used = static_cast<uint8_t>(text_used + size);
  }
}

namespace {

// The length of the valid UTF-8 sequence at `text[i]`, 0 when invalid or cut.
size_t utf8_sequence(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  uint32_t code = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if ((length == 3 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF))) ||
      (length == 4 && (code < 0x10000 || code > 0x10FFFF))) {
    return 0;
  }
  return length;
}

template <typename Integer>
char* write_integer(char* out, Integer value) {
  return std::to_chars(out, out + 24, value).ptr;
}

char* write_literal(char* out, std::string_view text) {
  std::memcpy(out, text.data(), text.size());
  return out + text.size();
}

char* write_microseconds(char* out, int64_t ns) {
  if (ns < 0) *out++ = '-';
  const uint64_t magnitude = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  out = write_integer(out, magnitude / 1000);
  const unsigned fraction = static_cast<unsigned>(magnitude % 1000);
  out[0] = '.';
  out[1] = static_cast<char>('0' + fraction / 100);
  out[2] = static_cast<char>('0' + fraction / 10 % 10);
  out[3] = static_cast<char>('0' + fraction % 10);
  return out + 4;
}

// `text` as a JSON string (quotes included) at `out`, which has room for 6 bytes a byte plus 2:
// what JSON requires escaped is; bytes of a cut UTF-8 sequence and other invalid bytes become
// U+FFFD.
char* write_json_string(char* out, std::string_view text) {
  *out++ = '"';
  for (size_t i = 0; i < text.size();) {
    // A run of bytes that need no escape, copied at once.
    size_t run = i;
    while (run < text.size()) {
      const unsigned char b = static_cast<unsigned char>(text[run]);
      if (b < 0x20 || b >= 0x80 || b == '"' || b == '\\') break;
      ++run;
    }
    out = write_literal(out, text.substr(i, run - i));
    i = run;
    if (i == text.size()) break;
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t length = utf8_sequence(text, i);
      if (length == 0) {
        out = write_literal(out, "\\ufffd");
        ++i;
      } else {
        out = write_literal(out, text.substr(i, length));
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"':
        out = write_literal(out, "\\\"");
        break;
      case '\\':
        out = write_literal(out, "\\\\");
        break;
      case '\n':
        out = write_literal(out, "\\n");
        break;
      case '\r':
        out = write_literal(out, "\\r");
        break;
      case '\t':
        out = write_literal(out, "\\t");
        break;
      default: {  // another control character
        constexpr char kHex[] = "0123456789abcdef";
        const char escaped[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out = write_literal(out, std::string_view(escaped, 6));
      }
    }
    ++i;
  }
  *out++ = '"';
  return out;
}

char* write_arg_value(char* out, const Event& event, const ArgSlot& slot) {
  switch (slot.kind) {
    case Arg::Kind::kInt:
      return write_integer(out, slot.int_value);
    case Arg::Kind::kUint:
      return write_integer(out, slot.uint_value);
    case Arg::Kind::kDouble:
      if (!std::isfinite(slot.double_value)) return write_literal(out, "null");
      // The shortest text that reads back as the same double.
      return std::to_chars(out, out + 40, slot.double_value).ptr;
    case Arg::Kind::kBool:
      return write_literal(out, slot.int_value != 0 ? "true" : "false");
    case Arg::Kind::kText:
      return write_json_string(out, std::string_view(event.text + slot.text_offset, slot.text_size));
  }
  return out;
}

}  // namespace

size_t event_json_bound(const Event& event) {
  // The fixed parts (keys, phase, scope, braces) and numbers (pid, tid, ts, dur or id: at most
  // 26 characters each), then every string as if each of its bytes were escaped as \uXXXX.
  size_t bound = 200 + 6 * size_t{event.text_used} + 2 * size_t{event.arg_count};
  if (event.category != nullptr) bound += 6 * std::strlen(event.category) + 16;
  for (uint8_t i = 0; i < event.arg_count; ++i) {
    const char* key = event.args[i].key;
    bound += (key != nullptr ? 6 * std::strlen(key) : 0) + 48;
  }
  return event.phase == 'A' ? 2 * bound + 2 : bound;
}

namespace {

// One JSON object of `event` as phase `phase`, at `ts_ns`, with args [first_arg, end_arg).
char* write_object(char* out, const Event& event, int64_t pid, char phase, int64_t ts_ns,
                   uint8_t first_arg, uint8_t end_arg) {
  out = write_literal(out, "{\"ph\":\"");
  *out++ = phase;
  out = write_literal(out, "\",\"name\":");
  out = write_json_string(out, event.name());
  if (event.category != nullptr && phase != 'M') {
    out = write_literal(out, ",\"cat\":");
    out = write_json_string(out, event.category);
  }
  out = write_literal(out, ",\"pid\":");
  out = write_integer(out, pid);
  out = write_literal(out, ",\"tid\":");
  out = write_integer(out, event.tid);
  if (phase != 'M') {
    out = write_literal(out, ",\"ts\":");
    out = write_microseconds(out, ts_ns);
  }
  if (phase == 'X') {
    out = write_literal(out, ",\"dur\":");
    out = write_microseconds(out, event.dur_ns);
  } else if (phase == 'i') {
    out = write_literal(out, ",\"s\":\"");
    *out++ = event.scope;
    *out++ = '"';
  } else if (phase == 'b' || phase == 'e') {
    out = write_literal(out, ",\"id\":");
    out = write_integer(out, event.id);
  }
  if (end_arg > first_arg) {
    out = write_literal(out, ",\"args\":{");
    for (uint8_t i = first_arg; i < end_arg; ++i) {
      if (i > first_arg) *out++ = ',';
      out = write_json_string(out, event.args[i].key != nullptr ? event.args[i].key : "");
      *out++ = ':';
      out = write_arg_value(out, event, event.args[i]);
    }
    *out++ = '}';
  }
  *out++ = '}';
  return out;
}

}  // namespace

char* write_event_json(char* out, const Event& event, int64_t pid) {
  if (event.phase != 'A') {
    return write_object(out, event, pid, event.phase, event.ts_ns, 0, event.arg_count);
  }
  const uint8_t split = std::min(event.begin_args, event.arg_count);
  out = write_object(out, event, pid, 'b', event.ts_ns, 0, split);
  out = write_literal(out, "\n,");
  return write_object(out, event, pid, 'e', event.ts_ns + event.dur_ns, split, event.arg_count);
}

void append_event_json(std::string& out, const Event& event, int64_t pid) {
  const size_t old = out.size();
  out.resize(old + event_json_bound(event));
  char* end = write_event_json(out.data() + old, event, pid);
  out.resize(static_cast<size_t>(end - out.data()));
}

}  // namespace gradwire::timeline
