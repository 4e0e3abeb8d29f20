// The timeline's compact records (timeline_record.h, Note [timeline records]).
#include "common/timeline_record.h"

#include <string>
#include <unordered_map>

namespace gradwire::timeline {

static_assert(sizeof(RecordHead) == 48 && sizeof(RecordArg) == 16);
static_assert(3 * kMaxArgs <= 32, "RecordHead::kinds holds 3 bits an arg");

void encode_record(unsigned char* out, const Event& event) {
  RecordHead head;
  head.size = static_cast<uint16_t>(record_size(event));
  head.phase = event.phase;
  head.scope = event.scope;
  head.arg_count = event.arg_count;
  head.begin_args = event.begin_args;
  head.name_size = event.name_size;
  head.text_used = event.text_used;
  head.tid = event.tid;
  head.kinds = 0;
  head.ts_ns = event.ts_ns;
  head.dur_ns = event.dur_ns;
  head.id = event.id;
  head.category = reinterpret_cast<uintptr_t>(event.category);
  unsigned char* at = out + sizeof head;
  for (uint8_t i = 0; i < event.arg_count; ++i) {
    const ArgSlot& slot = event.args[i];
    head.kinds |= static_cast<uint32_t>(slot.kind) << (3 * i);
    RecordArg arg;
    arg.key = reinterpret_cast<uintptr_t>(slot.key);
    arg.value = slot.kind == Arg::Kind::kText
                    ? uint64_t{slot.text_offset} | uint64_t{slot.text_size} << 8
                    : slot.uint_value;
    std::memcpy(at, &arg, sizeof arg);
    at += sizeof arg;
  }
  std::memcpy(out, &head, sizeof head);
  std::memcpy(at, event.text, event.text_used);
  // The padding zeroed: a file's bytes depend on its events only.
  std::memset(at + event.text_used, 0, head.size - (at + event.text_used - out));
}

namespace {

void append_record(std::vector<unsigned char>& out, const Event& event) {
  const size_t at = out.size();
  out.resize(at + record_size(event));
  encode_record(out.data() + at, event);
}

}  // namespace

void append_string_record(std::vector<unsigned char>& out, uint64_t address, const char* text) {
  Event event;
  event.reset('S', text != nullptr ? text : "", nullptr);
  event.id = address;
  append_record(out, event);
}

void append_end_record(std::vector<unsigned char>& out) {
  Event event;
  event.reset('Z', "", nullptr);
  append_record(out, event);
}

namespace {

constexpr std::string_view kPhases = "XiCbeMA";
constexpr const char* kUnknownString = "?";

// The record at `at` (head.size bytes, all there) as an Event, its addresses looked up in
// `strings`; false when it is malformed.
bool decode_event(const unsigned char* at, const RecordHead& head,
                  const std::unordered_map<uint64_t, std::string>& strings, Event& event) {
  const size_t needed = sizeof head + head.arg_count * sizeof(RecordArg) + head.text_used;
  if (head.arg_count > kMaxArgs || head.begin_args > head.arg_count || needed > head.size ||
      head.name_size > head.text_used) {
    return false;
  }
  const auto lookup = [&](uint64_t address) -> const char* {
    const auto found = strings.find(address);
    return found != strings.end() ? found->second.c_str() : kUnknownString;
  };
  event.ts_ns = head.ts_ns;
  event.dur_ns = head.dur_ns;
  event.id = head.id;
  event.tid = head.tid;
  event.phase = head.phase;
  event.scope = head.scope;
  event.arg_count = head.arg_count;
  event.text_used = head.text_used;
  event.category = head.category != 0 ? lookup(head.category) : nullptr;
  event.name_size = head.name_size;
  event.begin_args = head.begin_args;
  for (uint8_t i = 0; i < head.arg_count; ++i) {
    RecordArg arg;
    std::memcpy(&arg, at + sizeof head + i * sizeof arg, sizeof arg);
    ArgSlot& slot = event.args[i];
    const uint32_t kind = (head.kinds >> (3 * i)) & 7;
    if (kind > static_cast<uint32_t>(Arg::Kind::kText)) return false;
    slot.key = arg.key != 0 ? lookup(arg.key) : nullptr;
    slot.kind = static_cast<Arg::Kind>(kind);
    slot.uint_value = arg.value;
    slot.text_offset = 0;
    slot.text_size = 0;
    if (slot.kind == Arg::Kind::kText) {
      slot.text_offset = static_cast<uint8_t>(arg.value & 0xFF);
      slot.text_size = static_cast<uint8_t>((arg.value >> 8) & 0xFF);
      if (size_t{slot.text_offset} + slot.text_size > head.text_used) return false;
    }
  }
  std::memcpy(event.text, at + sizeof head + head.arg_count * sizeof(RecordArg), head.text_used);
  return true;
}

}  // namespace

DecodeEnd for_each_event(std::string_view bytes, const std::function<void(const Event&)>& each) {
  DecodeEnd end;
  if (!is_process_file(bytes)) {
    end.dropped = bytes.empty() ? 0 : 1;
    return end;
  }
  std::unordered_map<uint64_t, std::string> strings;
  const auto* const begin = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t offset = kFileMagic.size();
  Event event;
  while (offset < bytes.size()) {
    const size_t left = bytes.size() - offset;
    RecordHead head;
    if (left < sizeof head) {
      end.dropped = 1;
      break;
    }
    std::memcpy(&head, begin + offset, sizeof head);
    if (head.size < sizeof head || head.size % 8 != 0 || head.size > left) {
      end.dropped = 1;
      break;
    }
    const unsigned char* at = begin + offset;
    offset += head.size;
    if (head.phase == 'Z') {
      end.closed = true;
      break;
    }
    if (head.phase == 'S') {
      if (sizeof head + head.text_used > head.size) {
        end.dropped = 1;
        break;
      }
      strings[head.id].assign(reinterpret_cast<const char*>(at + sizeof head), head.name_size);
      continue;
    }
    if (kPhases.find(head.phase) == std::string_view::npos ||
        !decode_event(at, head, strings, event)) {
      end.dropped = 1;
      break;
    }
    each(event);
  }
  return end;
}

DecodedFile decode_process_file(std::string_view bytes, int64_t pid) {
  DecodedFile file;
  std::string json_text;
  const DecodeEnd end = for_each_event(bytes, [&](const Event& event) {
    json_text.clear();
    append_event_json(json_text, event, pid);
    // An 'A' record is two objects, "b" then "e", apart by a newline and a comma, which no JSON
    // string holds unescaped.
    for (size_t start = 0; start <= json_text.size();) {
      size_t split = json_text.find("\n,", start);
      if (split == std::string::npos) split = json_text.size();
      file.events.push_back(nlohmann::json::parse(json_text.begin() + start,
                                                  json_text.begin() + split, nullptr, false));
      start = split + 2;
    }
  });
  file.closed = end.closed;
  file.dropped = end.dropped;
  return file;
}

std::string_view text_arg(const Event& event, std::string_view key) {
  for (uint8_t i = 0; i < event.arg_count; ++i) {
    const ArgSlot& slot = event.args[i];
    if (slot.kind == Arg::Kind::kText && slot.key != nullptr && key == slot.key) {
      return {event.text + slot.text_offset, slot.text_size};
    }
  }
  return {};
}

}  // namespace gradwire::timeline
