#include "zcal/probes/peer/peer_protocol.h"

#include <sodium.h>

#include <algorithm>
#include <cstring>

namespace zcal::probes::peer {
namespace {

// Magics name the frame, so that a frame of one kind is never read as
// another (the sizes differ too).
constexpr std::string_view kGreetingMagic = "ZCALSINK";
constexpr std::string_view kHelloMagic = "ZCALHELO";
constexpr std::string_view kAnswerMagic = "ZCALANSR";
constexpr std::string_view kDataMagic = "ZCALDATA";

// Big-endian writer and reader over a fixed frame. Offsets are constants of
// the layout; a reader past the end is a bug caught by the size check that
// precedes every decode, so the accessors need no checks of their own.
class Writer {
 public:
  explicit Writer(std::span<std::uint8_t> out) : out_(out) {}
  void Bytes(std::span<const std::uint8_t> bytes) {
    std::copy(bytes.begin(), bytes.end(), out_.begin() + at_);
    at_ += bytes.size();
  }
  void Text(std::string_view text, std::size_t width) {
    for (std::size_t i = 0; i < width; ++i) {
      out_[at_ + i] = i < text.size() ? static_cast<std::uint8_t>(text[i]) : 0;
    }
    at_ += width;
  }
  void U16(std::uint16_t v) { Uint(v, 2); }
  void U32(std::uint32_t v) { Uint(v, 4); }
  void U64(std::uint64_t v) { Uint(v, 8); }

 private:
  void Uint(std::uint64_t v, std::size_t width) {
    for (std::size_t i = 0; i < width; ++i) {
      out_[at_ + i] = static_cast<std::uint8_t>(v >> (8 * (width - 1 - i)));
    }
    at_ += width;
  }
  std::span<std::uint8_t> out_;
  std::size_t at_ = 0;
};

class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> in) : in_(in) {}
  std::span<const std::uint8_t> Bytes(std::size_t n) {
    const auto part = in_.subspan(at_, n);
    at_ += n;
    return part;
  }
  std::uint16_t U16() { return static_cast<std::uint16_t>(Uint(2)); }
  std::uint32_t U32() { return static_cast<std::uint32_t>(Uint(4)); }
  std::uint64_t U64() { return Uint(8); }

 private:
  std::uint64_t Uint(std::size_t width) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < width; ++i) v = (v << 8) | in_[at_ + i];
    at_ += width;
    return v;
  }
  std::span<const std::uint8_t> in_;
  std::size_t at_ = 0;
};

Error Malformed(std::string_view frame, const std::string& what) {
  return Error{Errc::kParse, std::string(frame) + " frame: " + what};
}

// Size and magic, the checks every frame starts with.
Result<Reader> Open(std::span<const std::uint8_t> bytes, std::size_t size,
                    std::string_view magic, std::string_view frame) {
  if (bytes.size() != size) {
    return tl::unexpected(Error{
        Errc::kInvalidArgument,
        std::string(frame) + " frame: " + std::to_string(bytes.size()) +
            " bytes, expected exactly " + std::to_string(size)});
  }
  if (!std::equal(magic.begin(), magic.end(), bytes.begin(),
                  [](char a, std::uint8_t b) {
                    return static_cast<std::uint8_t>(a) == b;
                  })) {
    return tl::unexpected(Malformed(frame, "wrong magic (not a zcal peer)"));
  }
  Reader reader(bytes);
  reader.Bytes(kMagicBytes);
  return reader;
}

bool AllZero(std::span<const std::uint8_t> bytes) {
  return std::all_of(bytes.begin(), bytes.end(),
                     [](std::uint8_t b) { return b == 0; });
}

bool OneKnownMode(std::uint32_t mode) {
  return mode != 0 && (mode & (mode - 1)) == 0 && (mode & ~kKnownModes) == 0;
}

// The request's fields, in the order the hello carries and the MAC covers.
void WriteRequest(Writer& w, const Request& r) {
  w.U16(r.version);
  w.U32(r.mode);
  w.U32(r.duration_ms);
  w.U64(r.max_bytes);
  w.U64(r.max_bytes_per_second);
}

void WriteEndpoint(Writer& w, const common::HostPort& endpoint) {
  std::array<std::uint8_t, 16> mapped{};
  if (endpoint.address.IsIpv6()) {
    mapped = endpoint.address.bytes;
  } else {
    mapped[10] = 0xff;
    mapped[11] = 0xff;
    std::copy_n(endpoint.address.bytes.begin(), 4, mapped.begin() + 12);
  }
  w.Bytes(mapped);
  w.U16(endpoint.port);
}

}  // namespace

std::string_view AnswerCodeName(AnswerCode code) {
  switch (code) {
    case AnswerCode::kAccept: return "accept";
    case AnswerCode::kBusy: return "busy";
    case AnswerCode::kNotAllowed: return "not_allowed";
    case AnswerCode::kBadAuth: return "bad_auth";
    case AnswerCode::kUnsupportedVersion: return "unsupported_version";
    case AnswerCode::kOverLimit: return "over_limit";
    case AnswerCode::kProtocolError: return "protocol_error";
    case AnswerCode::kSourceLimit: return "source_limit";
    case AnswerCode::kConnectionLimit: return "connection_limit";
  }
  return "unknown";
}

bool ValidKeyId(std::string_view id) {
  return !id.empty() && id.size() <= kKeyIdBytes &&
         std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
         });
}

// Greeting: magic 8 | version 2 | min_version 2 | modes 4 | nonce 32 = 48
std::array<std::uint8_t, kGreetingBytes> Encode(const Greeting& g) {
  std::array<std::uint8_t, kGreetingBytes> out{};
  Writer w(out);
  w.Text(kGreetingMagic, kMagicBytes);
  w.U16(g.version);
  w.U16(g.min_version);
  w.U32(g.modes);
  w.Bytes(g.nonce);
  return out;
}

Result<Greeting> DecodeGreeting(std::span<const std::uint8_t> bytes) {
  auto reader = Open(bytes, kGreetingBytes, kGreetingMagic, "greeting");
  if (!reader) return tl::unexpected(reader.error());
  Greeting g;
  g.version = reader->U16();
  g.min_version = reader->U16();
  g.modes = reader->U32();
  const auto nonce = reader->Bytes(kNonceBytes);
  std::copy(nonce.begin(), nonce.end(), g.nonce.begin());
  if (g.min_version == 0 || g.min_version > g.version) {
    return tl::unexpected(Malformed(
        "greeting", "versions " + std::to_string(g.min_version) + ".." +
                        std::to_string(g.version) + " are no range"));
  }
  if (g.modes == 0) return tl::unexpected(Malformed("greeting", "no mode offered"));
  return g;
}

// Hello: magic 8 | key id 16 | version 2 | reserved 2 | mode 4 |
//        duration_ms 4 | max_bytes 8 | max_bytes_per_second 8 | mac 32 = 84
std::array<std::uint8_t, kHelloBytes> Encode(const Hello& h) {
  std::array<std::uint8_t, kHelloBytes> out{};
  Writer w(out);
  w.Text(kHelloMagic, kMagicBytes);
  w.Text(h.key_id, kKeyIdBytes);
  w.U16(h.request.version);
  w.U16(0);
  w.U32(h.request.mode);
  w.U32(h.request.duration_ms);
  w.U64(h.request.max_bytes);
  w.U64(h.request.max_bytes_per_second);
  w.Bytes(h.mac);
  return out;
}

Result<Hello> DecodeHello(std::span<const std::uint8_t> bytes) {
  auto reader = Open(bytes, kHelloBytes, kHelloMagic, "hello");
  if (!reader) return tl::unexpected(reader.error());
  Hello h;
  const auto id = reader->Bytes(kKeyIdBytes);
  // The id is its bytes up to the first zero; the rest must be zero too, so
  // that one id has one encoding.
  const auto end = std::find(id.begin(), id.end(), std::uint8_t{0});
  h.key_id.assign(id.begin(), end);
  if (!AllZero(std::span(end, id.end())) || !ValidKeyId(h.key_id)) {
    return tl::unexpected(Malformed("hello", "the key id is not 1 to 16 of [A-Za-z0-9_.-]"));
  }
  h.request.version = reader->U16();
  if (reader->U16() != 0) {
    return tl::unexpected(Malformed("hello", "reserved bytes are not zero"));
  }
  h.request.mode = reader->U32();
  h.request.duration_ms = reader->U32();
  h.request.max_bytes = reader->U64();
  h.request.max_bytes_per_second = reader->U64();
  const auto mac = reader->Bytes(kMacBytes);
  std::copy(mac.begin(), mac.end(), h.mac.begin());
  const Request& r = h.request;
  if (r.version == 0) return tl::unexpected(Malformed("hello", "version 0"));
  if (!OneKnownMode(r.mode)) {
    return tl::unexpected(Malformed("hello", "mode " + std::to_string(r.mode) +
                                                 " is not one known mode"));
  }
  if (r.duration_ms == 0 || r.duration_ms > kMaxSessionMs) {
    return tl::unexpected(Malformed("hello", "duration " + std::to_string(r.duration_ms) +
                                                 " ms is outside 1.." +
                                                 std::to_string(kMaxSessionMs)));
  }
  if (r.max_bytes == 0 || r.max_bytes > kMaxSessionBytes) {
    return tl::unexpected(Malformed("hello", "byte limit " + std::to_string(r.max_bytes) +
                                                 " is outside 1.." +
                                                 std::to_string(kMaxSessionBytes)));
  }
  return h;
}

// Answer: magic 8 | code 2 | reserved 2 | granted_ms 4 | granted_bytes 8 |
//         token 16 = 40
std::array<std::uint8_t, kAnswerBytes> Encode(const Answer& a) {
  std::array<std::uint8_t, kAnswerBytes> out{};
  Writer w(out);
  const bool accept = a.code == AnswerCode::kAccept;
  w.Text(kAnswerMagic, kMagicBytes);
  w.U16(static_cast<std::uint16_t>(a.code));
  w.U16(0);
  w.U32(accept ? a.granted_ms : 0);
  w.U64(accept ? a.granted_bytes : 0);
  if (accept) w.Bytes(a.token);
  return out;
}

Result<Answer> DecodeAnswer(std::span<const std::uint8_t> bytes) {
  auto reader = Open(bytes, kAnswerBytes, kAnswerMagic, "answer");
  if (!reader) return tl::unexpected(reader.error());
  Answer a;
  const std::uint16_t code = reader->U16();
  if (code > static_cast<std::uint16_t>(kLastAnswerCode)) {
    return tl::unexpected(Malformed("answer", "unknown code " + std::to_string(code)));
  }
  a.code = static_cast<AnswerCode>(code);
  if (reader->U16() != 0) {
    return tl::unexpected(Malformed("answer", "reserved bytes are not zero"));
  }
  a.granted_ms = reader->U32();
  a.granted_bytes = reader->U64();
  const auto token = reader->Bytes(kTokenBytes);
  std::copy(token.begin(), token.end(), a.token.begin());
  if (a.code == AnswerCode::kAccept) {
    if (a.granted_ms == 0 || a.granted_ms > kMaxSessionMs || a.granted_bytes == 0 ||
        a.granted_bytes > kMaxSessionBytes) {
      return tl::unexpected(Malformed("answer", "an accept grants limits out of range"));
    }
  } else if (a.granted_ms != 0 || a.granted_bytes != 0 || !AllZero(token)) {
    return tl::unexpected(Malformed("answer", "a refusal carries grants or a token"));
  }
  return a;
}

// DataOpen: magic 8 | token 16 = 24
std::array<std::uint8_t, kDataOpenBytes> EncodeDataOpen(const Token& token) {
  std::array<std::uint8_t, kDataOpenBytes> out{};
  Writer w(out);
  w.Text(kDataMagic, kMagicBytes);
  w.Bytes(token);
  return out;
}

Result<Token> DecodeDataOpen(std::span<const std::uint8_t> bytes) {
  auto reader = Open(bytes, kDataOpenBytes, kDataMagic, "data");
  if (!reader) return tl::unexpected(reader.error());
  Token token{};
  const auto part = reader->Bytes(kTokenBytes);
  std::copy(part.begin(), part.end(), token.begin());
  return token;
}

namespace {

bool IsMagic(std::span<const std::uint8_t> magic, std::string_view expected) {
  return magic.size() == kMagicBytes &&
         std::equal(expected.begin(), expected.end(), magic.begin(),
                    [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; });
}

}  // namespace

std::size_t ClientFrameBytes(std::span<const std::uint8_t> magic) {
  if (IsMagic(magic, kHelloMagic)) return kHelloBytes;
  if (IsMagic(magic, kDataMagic)) return kDataOpenBytes;
  return 0;
}

std::size_t SinkFrameBytes(std::span<const std::uint8_t> magic) {
  if (IsMagic(magic, kGreetingMagic)) return kGreetingBytes;
  if (IsMagic(magic, kAnswerMagic)) return kAnswerBytes;
  return 0;
}

std::uint16_t NegotiateVersion(const Greeting& greeting,
                               std::uint16_t client_version) {
  if (client_version < greeting.min_version) return 0;
  return std::min(client_version, greeting.version);
}

namespace {

// libsodium asks for sodium_init before any other of its functions; it is
// thread-safe and idempotent, and fails only when the kernel's random
// source cannot be opened (getrandom(2), /dev/urandom).
bool SodiumReady() {
  static const bool ready = sodium_init() >= 0;
  return ready;
}

}  // namespace

Mac ComputeMac(std::span<const std::uint8_t> secret, const Nonce& nonce,
               const common::HostPort& client, const common::HostPort& sink,
               const Request& request) {
  // nonce 32 | client 18 | sink 18 | request 26
  std::array<std::uint8_t, kNonceBytes + 18 + 18 + 26> message{};
  Writer w(message);
  w.Bytes(nonce);
  WriteEndpoint(w, client);
  WriteEndpoint(w, sink);
  WriteRequest(w, request);
  // libsodium's HMAC-SHA256 takes a key of any length (hashed when longer
  // than the block, as RFC 2104 says); a secret is at least 32 bytes.
  (void)SodiumReady();  // HMAC needs no random source: computed regardless
  Mac mac{};
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, secret.data(), secret.size());
  crypto_auth_hmacsha256_update(&state, message.data(), message.size());
  crypto_auth_hmacsha256_final(&state, mac.data());
  sodium_memzero(&state, sizeof state);
  return mac;
}

bool MacEqual(const Mac& a, const Mac& b) {
  return sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

Result<void> FillRandom(std::span<std::uint8_t> out) {
  if (!SodiumReady()) {
    return Fail(Errc::kIo,
                "the random number generator (libsodium) could not be "
                "initialised; check that getrandom(2) or /dev/urandom works");
  }
  randombytes_buf(out.data(), out.size());
  return {};
}

}  // namespace zcal::probes::peer
