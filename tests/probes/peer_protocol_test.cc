// The handshake frames: round trips, every malformed field refused with a
// reason, the MAC pinned by a known answer (computed with Python's hmac
// module from the layout in docs/peer-protocol.md), and the key file.
#include "zcal/probes/peer/peer_protocol.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "scratch_dir.h"
#include "zcal/common/text.h"
#include "zcal/probes/peer/peer_keys.h"

namespace zcal::probes::peer::peer_protocol_test {
namespace {

common::HostPort Endpoint(const char* text) {
  auto parsed = common::ParseHostPort(text, common::PortRule::kNonZero);
  EXPECT_TRUE(parsed) << text;
  return *parsed;
}

Request SomeRequest() {
  Request r;
  r.duration_ms = 2000;
  r.max_bytes = 1ULL << 30;
  return r;
}

Hello SomeHello() {
  Hello h;
  h.key_id = "fleet-2026.a";
  h.request = SomeRequest();
  h.mac.fill(0x11);
  return h;
}

template <std::size_t N>
std::string DecodeErrorOf(std::array<std::uint8_t, N> frame,
                          Result<Hello> (*decode)(std::span<const std::uint8_t>)) {
  const auto decoded = decode(frame);
  return decoded ? "" : decoded.error().message;
}

TEST(PeerProtocol, FramesRoundTrip) {
  Greeting g;
  g.nonce.fill(0x5a);
  g.min_version = 1;
  g.version = 3;
  const auto greeting = DecodeGreeting(Encode(g));
  ASSERT_TRUE(greeting) << greeting.error().message;
  EXPECT_EQ(greeting->version, 3);
  EXPECT_EQ(greeting->min_version, 1);
  EXPECT_EQ(greeting->nonce, g.nonce);

  const Hello h = SomeHello();
  const auto hello = DecodeHello(Encode(h));
  ASSERT_TRUE(hello) << hello.error().message;
  EXPECT_EQ(hello->key_id, h.key_id);
  EXPECT_EQ(hello->request.duration_ms, 2000u);
  EXPECT_EQ(hello->request.max_bytes, 1ULL << 30);
  EXPECT_EQ(hello->mac, h.mac);

  Answer a;
  a.code = AnswerCode::kAccept;
  a.granted_ms = 1500;
  a.granted_bytes = 1 << 20;
  a.token.fill(0x77);
  const auto answer = DecodeAnswer(Encode(a));
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->granted_ms, 1500u);
  EXPECT_EQ(answer->token, a.token);

  Answer busy;
  busy.code = AnswerCode::kBusy;
  busy.granted_ms = 99;  // not sent with a refusal
  const auto refused = DecodeAnswer(Encode(busy));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->code, AnswerCode::kBusy);
  EXPECT_EQ(refused->granted_ms, 0u);
  EXPECT_EQ(AnswerCodeName(refused->code), "busy");

  const auto token = DecodeDataOpen(EncodeDataOpen(a.token));
  ASSERT_TRUE(token);
  EXPECT_EQ(*token, a.token);
}

TEST(PeerProtocol, EveryFrameHasOneSizeAndItsOwnMagic) {
  const auto hello = Encode(SomeHello());
  EXPECT_EQ(hello.size(), kHelloBytes);
  const auto shorter = std::span(hello).first(kHelloBytes - 1);
  EXPECT_EQ(DecodeHello(shorter).error().code, Errc::kInvalidArgument);
  std::vector<std::uint8_t> longer(hello.begin(), hello.end());
  longer.push_back(0);
  EXPECT_EQ(DecodeHello(longer).error().code, Errc::kInvalidArgument);
  EXPECT_FALSE(DecodeHello({}));
  // A greeting is no answer, even cut to an answer's size.
  const auto greeting = Encode(Greeting{});
  const auto as_answer = DecodeAnswer(std::span(greeting).first(kAnswerBytes));
  ASSERT_FALSE(as_answer);
  EXPECT_NE(as_answer.error().message.find("wrong magic"), std::string::npos);
}

TEST(PeerProtocol, HelloFieldsAreRangeChecked) {
  const auto with = [](auto change) {
    Hello h = SomeHello();
    change(h);
    return Encode(h);
  };
  EXPECT_NE(DecodeErrorOf(with([](Hello& h) { h.request.duration_ms = 0; }), DecodeHello)
                .find("duration 0 ms"),
            std::string::npos);
  EXPECT_NE(DecodeErrorOf(with([](Hello& h) { h.request.duration_ms = kMaxSessionMs + 1; }),
                          DecodeHello),
            "");
  EXPECT_NE(DecodeErrorOf(with([](Hello& h) { h.request.max_bytes = 0; }), DecodeHello), "");
  EXPECT_NE(DecodeErrorOf(with([](Hello& h) { h.request.max_bytes = ~0ULL; }), DecodeHello),
            "");
  EXPECT_NE(DecodeErrorOf(with([](Hello& h) { h.request.mode = 3; }), DecodeHello)
                .find("not one known mode"),
            std::string::npos);
  EXPECT_NE(DecodeErrorOf(with([](Hello& h) { h.request.mode = 1U << 31; }), DecodeHello), "");
  EXPECT_NE(DecodeErrorOf(with([](Hello& h) { h.request.version = 0; }), DecodeHello), "");
  EXPECT_NE(DecodeErrorOf(with([](Hello& h) { h.key_id = "bad id"; }), DecodeHello)
                .find("key id"),
            std::string::npos);
  // Bytes after the id's terminating zero: two encodings of one id.
  auto frame = Encode(SomeHello());
  frame[8 + 15] = 'x';
  EXPECT_NE(DecodeErrorOf(frame, DecodeHello), "");
  frame = Encode(SomeHello());
  frame[8 + 16 + 2] = 1;  // reserved
  EXPECT_NE(DecodeErrorOf(frame, DecodeHello).find("reserved"), std::string::npos);
}

TEST(PeerProtocol, GreetingsAndAnswersAreChecked) {
  Greeting g;
  g.min_version = 2;
  g.version = 1;
  EXPECT_FALSE(DecodeGreeting(Encode(g)));
  g = Greeting{};
  g.modes = 0;
  EXPECT_FALSE(DecodeGreeting(Encode(g)));

  auto answer = Encode(Answer{AnswerCode::kBusy, 0, 0, {}});
  answer[9] = 9;  // code 9 is not defined (8, kConnectionLimit, is the last)
  static_assert(static_cast<int>(kLastAnswerCode) == 8);
  EXPECT_NE(DecodeAnswer(answer).error().message.find("unknown code 9"), std::string::npos);
  Answer accept{AnswerCode::kAccept, 0, 1, {}};  // grants no time
  EXPECT_FALSE(DecodeAnswer(Encode(accept)));
  auto refusal = Encode(Answer{AnswerCode::kBadAuth, 0, 0, {}});
  refusal[39] = 1;  // a token with a refusal
  EXPECT_FALSE(DecodeAnswer(refusal));
}

TEST(PeerProtocol, VersionsAreNegotiatedWithinTheSinksRange) {
  Greeting g;
  g.min_version = 2;
  g.version = 4;
  EXPECT_EQ(NegotiateVersion(g, 1), 0);
  EXPECT_EQ(NegotiateVersion(g, 3), 3);
  EXPECT_EQ(NegotiateVersion(g, 9), 4);
}

TEST(PeerProtocol, MacCoversNonceAddressesAndRequest) {
  std::array<std::uint8_t, 32> secret{};
  for (std::size_t i = 0; i < secret.size(); ++i) secret[i] = static_cast<std::uint8_t>(i);
  Nonce nonce;
  nonce.fill(0xa5);
  const auto client = Endpoint("198.18.0.1:40000");
  const auto sink = Endpoint("198.18.0.2:9465");
  const Request request = SomeRequest();
  const Mac mac = ComputeMac(secret, nonce, client, sink, request);
  EXPECT_EQ(common::HexBytes(mac),
            "834725e1161185c9c424d4c49f0f757376d2476086a5a15f550a0ffe43f94ab5");
  EXPECT_TRUE(MacEqual(mac, mac));

  Nonce other_nonce = nonce;
  other_nonce[0] ^= 1;
  EXPECT_FALSE(MacEqual(mac, ComputeMac(secret, other_nonce, client, sink, request)));
  EXPECT_FALSE(MacEqual(mac, ComputeMac(secret, nonce, Endpoint("198.18.0.3:40000"), sink,
                                        request)));
  EXPECT_FALSE(MacEqual(mac, ComputeMac(secret, nonce, client, Endpoint("[::1]:9465"),
                                        request)));
  Request more = request;
  more.max_bytes += 1;
  EXPECT_FALSE(MacEqual(mac, ComputeMac(secret, nonce, client, sink, more)));
  secret[31] ^= 1;
  EXPECT_FALSE(MacEqual(mac, ComputeMac(secret, nonce, client, sink, request)));
}

TEST(PeerProtocol, RandomBytesDiffer) {
  Nonce a{}, b{};
  ASSERT_TRUE(FillRandom(a));
  ASSERT_TRUE(FillRandom(b));
  EXPECT_NE(a, b);
}

TEST(PeerKeys, ParsesKeysCommentsAndRotation) {
  const std::string old_secret(64, 'a');
  const std::string new_secret(96, '0');
  const auto ring = ParseKeyFile("# fleet keys\n\nnew " + new_secret + "\n  old\t" +
                                     old_secret + "  \n",
                                 "keys");
  ASSERT_TRUE(ring) << ring.error().message;
  ASSERT_EQ(ring->keys.size(), 2u);
  EXPECT_EQ(ring->Presented().id, "new");
  EXPECT_EQ(ring->Presented().secret.size(), 48u);
  ASSERT_NE(ring->Find("old"), nullptr);
  EXPECT_EQ(ring->Find("old")->secret[0], 0xaa);
  EXPECT_EQ(ring->Find("gone"), nullptr);
}

TEST(PeerKeys, RefusesBadLinesWithTheirLineAndNeverTheSecret) {
  const std::string secret(64, 'b');
  const auto error = [](const std::string& text) {
    const auto ring = ParseKeyFile(text, "k.txt");
    return ring ? std::string() : ring.error().message;
  };
  EXPECT_EQ(error("a " + secret + "\nb " + std::string(62, 'c') + "\n"),
            "k.txt:2: the secret of key b has 31 bytes; allowed: 32 to 64 "
            "(`zcal keygen` prints a key)");
  EXPECT_NE(error("a " + secret + "\na " + secret).find("k.txt:2: key id a is repeated"),
            std::string::npos);
  EXPECT_NE(error("a " + std::string(63, 'b')).find("even number of hex digits"),
            std::string::npos);
  EXPECT_NE(error("a " + std::string(62, 'b') + "zz").find("hex digits"), std::string::npos);
  EXPECT_NE(error("waytoolongkeyid_17 " + secret).find("is not 1 to 16"), std::string::npos);
  EXPECT_NE(error("lonely\n").find("has no secret"), std::string::npos);
  EXPECT_NE(error("# only a comment\n").find("no key"), std::string::npos);
  for (const std::string& message : {error("b " + std::string(62, 'c'))}) {
    EXPECT_EQ(message.find(std::string(62, 'c')), std::string::npos) << message;
  }
}

TEST(PeerKeys, NewKeyLinesParseAndDiffer) {
  const auto a = NewKeyLine("");
  const auto b = NewKeyLine("rot-2");
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(b->starts_with("rot-2 "));
  const auto ring = ParseKeyFile(*a + "\n" + *b + "\n", "generated");
  ASSERT_TRUE(ring) << ring.error().message;
  EXPECT_EQ(ring->keys.size(), 2u);
  EXPECT_NE(ring->keys[0].secret, ring->keys[1].secret);
  EXPECT_FALSE(NewKeyLine("no spaces allowed"));
}

TEST(PeerKeys, WarnsAboutAKeyFileOthersMayRead) {
  const probes::testing::ScratchDir dir("keys");
  const std::string file = (dir.path() / "peer.keys").string();
  const char* path = file.c_str();
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  const auto line = NewKeyLine("k1");
  ASSERT_TRUE(line);
  ASSERT_EQ(write(fd, line->data(), line->size()), static_cast<ssize_t>(line->size()));
  close(fd);
  ASSERT_EQ(chmod(path, 0600), 0);
  auto ring = LoadKeyFile(path);
  ASSERT_TRUE(ring) << ring.error().message;
  EXPECT_TRUE(ring->warnings.empty());
  ASSERT_EQ(chmod(path, 0644), 0);
  ring = LoadKeyFile(path);
  ASSERT_TRUE(ring);
  ASSERT_EQ(ring->warnings.size(), 1u);
  EXPECT_NE(ring->warnings[0].find("mode 0644"), std::string::npos) << ring->warnings[0];
  unlink(path);
  EXPECT_EQ(LoadKeyFile(path).error().code, Errc::kNotFound);
  EXPECT_EQ(LoadKeyFile("/dev/zero").error().code, Errc::kInvalidArgument);
}

}  // namespace
}  // namespace zcal::probes::peer::peer_protocol_test
