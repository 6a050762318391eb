// The peer-probe handshake, version 1 (docs/peer-protocol.md has the byte
// layouts and the reasoning). Every frame has a fixed size and is decoded
// from exactly that many bytes: there is no length field to wrap, nothing
// variable is parsed before the client is authenticated, and every field is
// range-checked here, so that a sink and a client share one parser and a
// malformed frame is an error value, never an assert or a crash.
//
// The exchange on the control connection:
//   sink   -> client  Greeting  (magic, versions, modes, 32-byte nonce)
//   client -> sink    Hello     (key id, requested limits, HMAC-SHA256)
//   sink   -> client  Answer    (accept with granted limits and a session
//                                token, or a refusal code)
// then every data connection opens with a DataOpen frame carrying the token.
//
// Thread safety: free functions, no shared state.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "zcal/common/address.h"
#include "zcal/common/result.h"

namespace zcal::probes::peer {

inline constexpr std::uint16_t kProtocolVersion = 1;

inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kMacBytes = 32;    ///< HMAC-SHA256
inline constexpr std::size_t kTokenBytes = 16;
inline constexpr std::size_t kKeyIdBytes = 16;  ///< ASCII, zero-padded

inline constexpr std::size_t kGreetingBytes = 48;
inline constexpr std::size_t kHelloBytes = 84;
inline constexpr std::size_t kAnswerBytes = 40;
inline constexpr std::size_t kDataOpenBytes = 24;

/// Limits a client may ask for; a sink grants at most its own limits.
inline constexpr std::uint32_t kMaxSessionMs = 600'000;  ///< 10 minutes
inline constexpr std::uint64_t kMaxSessionBytes = 1ULL << 40;

using Nonce = std::array<std::uint8_t, kNonceBytes>;
using Mac = std::array<std::uint8_t, kMacBytes>;
using Token = std::array<std::uint8_t, kTokenBytes>;

/// Modes a sink offers (Greeting.modes), a bit each.
enum Mode : std::uint32_t {
  kModeTcpStream = 1U << 0,  ///< receive a TCP byte stream and discard it
};
inline constexpr std::uint32_t kKnownModes = kModeTcpStream;

struct Greeting {
  std::uint16_t version = kProtocolVersion;      ///< highest the sink speaks
  std::uint16_t min_version = kProtocolVersion;  ///< lowest it speaks
  std::uint32_t modes = kModeTcpStream;
  Nonce nonce{};
};

/// What a client asks for. 1 <= duration_ms <= kMaxSessionMs,
/// 1 <= max_bytes <= kMaxSessionBytes, max_bytes_per_second 0 = no cap.
struct Request {
  std::uint16_t version = kProtocolVersion;
  std::uint32_t mode = kModeTcpStream;  ///< exactly one Mode bit
  std::uint32_t duration_ms = 0;
  std::uint64_t max_bytes = 0;
  std::uint64_t max_bytes_per_second = 0;
};

struct Hello {
  std::string key_id;  ///< 1..16 of [A-Za-z0-9_.-]
  Request request;
  Mac mac{};
};

/// Answer codes: 0 accepts, every other value refuses.
enum class AnswerCode : std::uint16_t {
  kAccept = 0,
  kBusy = 1,                ///< another session runs; try later or another peer
  kNotAllowed = 2,          ///< the source address is outside `allow`
  kBadAuth = 3,             ///< unknown key id, wrong MAC, or nonce reused
  kUnsupportedVersion = 4,  ///< no version in common
  kOverLimit = 5,           ///< the request exceeds what this sink grants
  kProtocolError = 6,       ///< a malformed frame
  /// Sent in place of the greeting, at accept, before anything is read:
  kSourceLimit = 7,      ///< this source holds max_connections_per_source
  kConnectionLimit = 8,  ///< the sink holds max_connections in all
};
inline constexpr AnswerCode kLastAnswerCode = AnswerCode::kConnectionLimit;
std::string_view AnswerCodeName(AnswerCode code);  ///< "accept", "busy", ...

struct Answer {
  AnswerCode code = AnswerCode::kProtocolError;
  std::uint32_t granted_ms = 0;     ///< with kAccept
  std::uint64_t granted_bytes = 0;  ///< with kAccept
  Token token{};                    ///< with kAccept; zero otherwise
};

/// A key id is 1 to 16 bytes of letters, digits, '_', '.', '-'.
bool ValidKeyId(std::string_view id);

std::array<std::uint8_t, kGreetingBytes> Encode(const Greeting& greeting);
std::array<std::uint8_t, kHelloBytes> Encode(const Hello& hello);
std::array<std::uint8_t, kAnswerBytes> Encode(const Answer& answer);
std::array<std::uint8_t, kDataOpenBytes> EncodeDataOpen(const Token& token);

/// Each decodes exactly its frame size (kInvalidArgument otherwise) and
/// checks every field: magic, reserved bytes zero, versions ordered, known
/// modes, key id characters, limits within range, a known answer code.
/// Errors are kParse with what was wrong, for the log and the counters.
Result<Greeting> DecodeGreeting(std::span<const std::uint8_t> bytes);
Result<Hello> DecodeHello(std::span<const std::uint8_t> bytes);
Result<Answer> DecodeAnswer(std::span<const std::uint8_t> bytes);
Result<Token> DecodeDataOpen(std::span<const std::uint8_t> bytes);

/// The first 8 bytes a client sends on a connection name its frame: the
/// size of that frame (kHelloBytes or kDataOpenBytes), or 0 for any other
/// magic. A sink reads exactly this many bytes and nothing more.
inline constexpr std::size_t kMagicBytes = 8;
std::size_t ClientFrameBytes(std::span<const std::uint8_t> magic);

/// The same for the first frame a sink sends on a connection: kGreetingBytes,
/// or kAnswerBytes for a refusal at accept (kSourceLimit,
/// kConnectionLimit), or 0 for any other magic.
std::size_t SinkFrameBytes(std::span<const std::uint8_t> magic);

/// The version both speak: the highest of the client's that lies within
/// [greeting.min_version, greeting.version]; 0 when there is none.
std::uint16_t NegotiateVersion(const Greeting& greeting,
                               std::uint16_t client_version);

/// HMAC-SHA256(secret, nonce || client address || sink address || the
/// request's fields), addresses as 16 bytes (IPv4 mapped into IPv6) and a
/// 2-byte port, as each side sees them on the control connection: a hello
/// recorded on one connection or for another sink does not verify.
Mac ComputeMac(std::span<const std::uint8_t> secret, const Nonce& nonce,
               const common::HostPort& client, const common::HostPort& sink,
               const Request& request);

/// Constant-time comparison (libsodium's sodium_memcmp).
bool MacEqual(const Mac& a, const Mac& b);

/// Random bytes from libsodium's CSPRNG; kIo when it cannot be initialised.
Result<void> FillRandom(std::span<std::uint8_t> out);

}  // namespace zcal::probes::peer
