// The timeline's events as JSON lines (timeline_event.h).
#include "common/timeline_event.h"

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
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

void Event::copy_used_to(Event& out) const {
  static_assert(std::is_standard_layout_v<Event>);
  std::memcpy(static_cast<void*>(&out), this, offsetof(Event, args));
  std::memcpy(static_cast<void*>(out.args), args, arg_count * sizeof(ArgSlot));
  std::memcpy(out.text, text, text_used);
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
void append_integer(std::string& out, Integer value) {
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

void append_microseconds(std::string& out, int64_t ns) {
  if (ns < 0) out += '-';
  const uint64_t magnitude = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  append_integer(out, magnitude / 1000);
  const unsigned fraction = static_cast<unsigned>(magnitude % 1000);
  const char digits[4] = {'.', static_cast<char>('0' + fraction / 100),
                          static_cast<char>('0' + fraction / 10 % 10),
                          static_cast<char>('0' + fraction % 10)};
  out.append(digits, 4);
}

void append_arg_value(std::string& out, const Event& event, const ArgSlot& slot) {
  char buffer[40];
  switch (slot.kind) {
    case Arg::Kind::kInt:
      append_integer(out, slot.int_value);
      return;
    case Arg::Kind::kUint:
      append_integer(out, slot.uint_value);
      return;
    case Arg::Kind::kDouble:
      if (!std::isfinite(slot.double_value)) {
        out += "null";
        return;
      }
      // The shortest text that reads back as the same double.
      out.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, slot.double_value).ptr);
      return;
    case Arg::Kind::kBool:
      out += slot.int_value != 0 ? "true" : "false";
      return;
    case Arg::Kind::kText:
      append_json_string(out, std::string_view(event.text + slot.text_offset, slot.text_size));
      return;
  }
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (size_t i = 0; i < text.size();) {
    // A run of bytes that need no escape, appended at once.
    size_t run = i;
    while (run < text.size()) {
      const unsigned char b = static_cast<unsigned char>(text[run]);
      if (b < 0x20 || b >= 0x80 || b == '"' || b == '\\') break;
      ++run;
    }
    out.append(text.data() + i, run - i);
    i = run;
    if (i == text.size()) break;
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t length = utf8_sequence(text, i);
      if (length == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(text.data() + i, length);
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
          out += buffer;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

void append_event_json(std::string& out, const Event& event, int64_t pid) {
  out += "{\"ph\":\"";
  out += event.phase;
  out += "\",\"name\":";
  append_json_string(out, event.name());
  if (event.category != nullptr && event.phase != 'M') {
    out += ",\"cat\":";
    append_json_string(out, event.category);
  }
  out += ",\"pid\":";
  append_integer(out, pid);
  out += ",\"tid\":";
  append_integer(out, event.tid);
  if (event.phase != 'M') {
    out += ",\"ts\":";
    append_microseconds(out, event.ts_ns);
  }
  if (event.phase == 'X') {
    out += ",\"dur\":";
    append_microseconds(out, event.dur_ns);
  } else if (event.phase == 'i') {
    out += ",\"s\":\"";
    out += event.scope;
    out += '"';
  } else if (event.phase == 'b' || event.phase == 'e') {
    out += ",\"id\":";
    append_integer(out, event.id);
  }
  if (event.arg_count > 0) {
    out += ",\"args\":{";
    for (uint8_t i = 0; i < event.arg_count; ++i) {
      if (i > 0) out += ',';
      append_json_string(out, event.args[i].key != nullptr ? event.args[i].key : "");
      out += ':';
      append_arg_value(out, event, event.args[i]);
    }
    out += '}';
  }
  out += '}';
}

}  // namespace gradwire::timeline
