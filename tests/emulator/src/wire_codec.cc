#include "wire_codec.h"

#include <cstring>

#include "bson/convert.h"
#include "bson_writer.h"

namespace mongo_emulator {

namespace {

constexpr std::uint32_t flag_checksum_present = 1U << 0;
constexpr std::uint32_t flag_more_to_come = 1U << 1;
// Bits 0-15 are "required": a receiver must reject bits it does not know.
constexpr std::uint32_t required_bits_mask = 0xFFFFU;
constexpr std::uint32_t known_required_bits = flag_checksum_present | flag_more_to_come;

std::int32_t read_i32(const std::uint8_t* p) {
  std::uint32_t v = static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
                    (static_cast<std::uint32_t>(p[2]) << 16) |
                    (static_cast<std::uint32_t>(p[3]) << 24);
  return static_cast<std::int32_t>(v);
}

void write_i32(std::vector<std::uint8_t>& out, std::int32_t v) {
  const auto u = static_cast<std::uint32_t>(v);
  for (int shift = 0; shift < 32; shift += 8)
    out.push_back(static_cast<std::uint8_t>(u >> shift));
}

void patch_i32(std::vector<std::uint8_t>& out, std::size_t at, std::int32_t v) {
  const auto u = static_cast<std::uint32_t>(v);
  for (int i = 0; i < 4; ++i)
    out[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(u >> (8 * i));
}

// A cursor reply's batch (`cursor.firstBatch` or `cursor.nextBatch`): the one array whose
// elements may be pre-encoded change events.
const bson::array* cursor_batch(const bson::document& reply) {
  const auto* c = reply.get("cursor");
  if (c == nullptr || !c->is_document()) return nullptr;
  for (const char* name : {"firstBatch", "nextBatch"}) {
    if (const auto* b = c->as_document().get(name); b != nullptr && b->is_array())
      return &b->as_array();
  }
  return nullptr;
}

// A bounds-checked reader over the message body.
class reader {
 public:
  explicit reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

  std::size_t remaining() const { return bytes_.size() - pos_; }
  std::size_t position() const { return pos_; }

  expected<std::int32_t> i32() {
    if (remaining() < 4) return fail("message truncated reading an int32");
    const auto v = read_i32(bytes_.data() + pos_);
    pos_ += 4;
    return v;
  }
  expected<std::uint8_t> byte() {
    if (remaining() < 1) return fail("message truncated reading a byte");
    return bytes_[pos_++];
  }
  expected<std::string> cstring() {
    const auto* begin = bytes_.data() + pos_;
    const auto* end = static_cast<const std::uint8_t*>(std::memchr(begin, 0, remaining()));
    if (end == nullptr) return fail("unterminated cstring");
    std::string s(reinterpret_cast<const char*>(begin), static_cast<std::size_t>(end - begin));
    pos_ += s.size() + 1;
    return s;
  }
  // One BSON document; its own length prefix decides how much it consumes.
  expected<bson::document> document() {
    if (remaining() < 5) return fail("message truncated reading a BSON document");
    const auto len = read_i32(bytes_.data() + pos_);
    if (len < 5 || static_cast<std::size_t>(len) > remaining())
      return fail("invalid BSON document length " + std::to_string(len));
    auto doc = bson::from_bson(bytes_.subspan(pos_, static_cast<std::size_t>(len)));
    if (!doc) return fail("invalid BSON: " + doc.error().message);
    pos_ += static_cast<std::size_t>(len);
    return doc;
  }
  reader sub(std::size_t size) {
    reader r(bytes_.subspan(pos_, size));
    pos_ += size;
    return r;
  }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

expected<request> finish_request(request req) {
  if (req.body.empty()) return fail("empty command document");
  req.command = req.body.fields().front().name;
  return req;
}

expected<request> parse_op_query(const message_header& header, reader r) {
  request req;
  req.header = header;
  req.legacy = true;
  auto flags = r.i32();
  if (!flags) return flags.error();
  auto name = r.cstring();
  if (!name) return name.error();
  auto skip = r.i32();
  if (!skip) return skip.error();
  auto to_return = r.i32();
  if (!to_return) return to_return.error();
  auto query = r.document();
  if (!query) return query.error();
  if (r.remaining() > 0) {
    auto fields = r.document();  // optional returnFieldsSelector, ignored for commands
    if (!fields) return fields.error();
  }
  if (r.remaining() != 0) return fail("trailing bytes after OP_QUERY");
  constexpr std::string_view cmd_suffix = ".$cmd";
  const std::string& ns = *name;
  if (ns.size() > cmd_suffix.size() && ns.ends_with(cmd_suffix)) {
    req.db = ns.substr(0, ns.size() - cmd_suffix.size());
  } else {
    req.db = ns.substr(0, ns.find('.'));
  }
  // Drivers wrap commands sent with a read preference: {$query: {...}, $readPreference: ...}.
  if (const auto* inner = query->get("$query"); inner != nullptr && inner->is_document()) {
    req.body = inner->as_document();
  } else {
    req.body = std::move(query).value();
  }
  return finish_request(std::move(req));
}

expected<request> parse_op_msg(const message_header& header, reader r) {
  request req;
  req.header = header;
  auto raw_flags = r.i32();
  if (!raw_flags) return raw_flags.error();
  const auto flags = static_cast<std::uint32_t>(*raw_flags);
  if ((flags & required_bits_mask & ~known_required_bits) != 0)
    return fail("OP_MSG has unknown required flag bits set");
  req.more_to_come = (flags & flag_more_to_come) != 0;
  std::size_t payload = r.remaining();
  if ((flags & flag_checksum_present) != 0) {
    if (payload < 4) return fail("OP_MSG too short for its checksum");
    payload -= 4;  // drivers may add a crc32c; it is optional to verify, so it is stripped
  }
  reader sections = r.sub(payload);
  bool have_body = false;
  std::vector<std::pair<std::string, bson::array>> sequences;
  while (sections.remaining() > 0) {
    auto kind = sections.byte();
    if (!kind) return kind.error();
    if (*kind == 0) {
      if (have_body) return fail("OP_MSG has more than one kind-0 section");
      auto doc = sections.document();
      if (!doc) return doc.error();
      req.body = std::move(doc).value();
      have_body = true;
    } else if (*kind == 1) {
      auto size = sections.i32();
      if (!size) return size.error();
      if (*size < 5 || static_cast<std::size_t>(*size) - 4 > sections.remaining())
        return fail("invalid document sequence size " + std::to_string(*size));
      reader seq = sections.sub(static_cast<std::size_t>(*size) - 4);
      auto id = seq.cstring();
      if (!id) return id.error();
      bson::array docs;
      while (seq.remaining() > 0) {
        auto doc = seq.document();
        if (!doc) return doc.error();
        docs.emplace_back(std::move(doc).value());
      }
      sequences.emplace_back(std::move(id).value(), std::move(docs));
    } else {
      return fail("unknown OP_MSG section kind " + std::to_string(*kind));
    }
  }
  if (!have_body) return fail("OP_MSG has no kind-0 section");
  for (auto& [id, docs] : sequences) {
    if (req.body.contains(id)) return fail("duplicate field '" + id + "' in document sequence");
    req.body.append(id, std::move(docs));
    req.sequence_fields.push_back(id);
  }
  if (const auto* db = req.body.get("$db"); db != nullptr) {
    if (!db->is_string()) return fail("$db is not a string");
    req.db = db->as_string();
  }
  return finish_request(std::move(req));
}

void write_header(std::vector<std::uint8_t>& out, std::int32_t request_id, std::int32_t response_to,
                  std::int32_t op_code) {
  write_i32(out, 0);  // length, patched at the end
  write_i32(out, request_id);
  write_i32(out, response_to);
  write_i32(out, op_code);
}

}  // namespace

expected<message_header> parse_header(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < header_size) return fail("short message header");
  message_header h;
  h.length = read_i32(bytes.data());
  h.request_id = read_i32(bytes.data() + 4);
  h.response_to = read_i32(bytes.data() + 8);
  h.op_code = read_i32(bytes.data() + 12);
  if (h.length < static_cast<std::int32_t>(header_size) + 5 || h.length > max_message_size)
    return fail("invalid message length " + std::to_string(h.length));
  if (h.op_code != op_query && h.op_code != op_msg)
    return fail("unsupported opcode " + std::to_string(h.op_code));
  return h;
}

expected<request> parse_request(const message_header& header, std::span<const std::uint8_t> body) {
  if (body.size() + header_size != static_cast<std::size_t>(header.length))
    return fail("message body does not match its length");
  if (header.op_code == op_query) return parse_op_query(header, reader(body));
  if (header.op_code == op_msg) return parse_op_msg(header, reader(body));
  return fail("unsupported opcode " + std::to_string(header.op_code));
}

std::vector<std::uint8_t> encode_reply(const request& req, std::int32_t request_id,
                                       const bson::document& reply) {
  const bson::array* batch = cursor_batch(reply);
  std::size_t estimate = 256;
  if (batch != nullptr) {
    for (const auto& item : *batch) {
      if (item.is<bson::binary>()) estimate += item.as<bson::binary>().data.size() + 16;
    }
  }
  std::vector<std::uint8_t> out;
  out.reserve(estimate);
  if (req.legacy) {
    write_header(out, request_id, req.header.request_id, op_reply);
    write_i32(out, 8);  // responseFlags: AwaitCapable
    write_i32(out, 0);  // cursorID (int64)
    write_i32(out, 0);
    write_i32(out, 0);  // startingFrom
    write_i32(out, 1);  // numberReturned
  } else {
    write_header(out, request_id, req.header.request_id, op_msg);
    write_i32(out, 0);  // flagBits
    out.push_back(0);   // kind-0 section
  }
  write_document(reply, out, batch);
  patch_i32(out, 0, static_cast<std::int32_t>(out.size()));
  return out;
}

std::vector<std::uint8_t> encode_op_msg(std::int32_t request_id, const bson::document& body,
                                        std::uint32_t flags) {
  std::vector<std::uint8_t> out;
  write_header(out, request_id, 0, op_msg);
  write_i32(out, static_cast<std::int32_t>(flags));
  out.push_back(0);
  bson::append_bytes(body, out);
  patch_i32(out, 0, static_cast<std::int32_t>(out.size()));
  return out;
}

std::vector<std::uint8_t> encode_op_query(std::int32_t request_id, std::string_view full_name,
                                          const bson::document& query) {
  std::vector<std::uint8_t> out;
  write_header(out, request_id, 0, op_query);
  write_i32(out, 0);  // flags
  out.insert(out.end(), full_name.begin(), full_name.end());
  out.push_back(0);
  write_i32(out, 0);   // numberToSkip
  write_i32(out, -1);  // numberToReturn
  bson::append_bytes(query, out);
  patch_i32(out, 0, static_cast<std::int32_t>(out.size()));
  return out;
}

}  // namespace mongo_emulator
