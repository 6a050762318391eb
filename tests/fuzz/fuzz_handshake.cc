// libFuzzer target over the peer handshake's frame decoders: the
// first byte picks the frame, the rest are its bytes. Whatever arrives, a
// decoder returns an error or a frame; and a frame it accepts re-encodes to
// exactly the bytes it came from (one encoding per value, so no field is
// read in two ways, none is ignored).
#include <cstdint>
#include <cstdlib>
#include <span>

#include "zcal/probes/peer/peer_protocol.h"

namespace peer = zcal::probes::peer;

namespace {

template <typename Frame, typename Encoded>
void ExpectSame(const Encoded& encoded, std::span<const std::uint8_t> input) {
  if (encoded.size() != input.size() ||
      !std::equal(encoded.begin(), encoded.end(), input.begin())) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::span<const std::uint8_t> frame(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      if (const auto g = peer::DecodeGreeting(frame)) {
        ExpectSame<peer::Greeting>(peer::Encode(*g), frame);
      }
      break;
    case 1:
      if (const auto h = peer::DecodeHello(frame)) {
        if (!peer::ValidKeyId(h->key_id)) std::abort();
        if (h->request.duration_ms == 0 || h->request.duration_ms > peer::kMaxSessionMs) {
          std::abort();
        }
        ExpectSame<peer::Hello>(peer::Encode(*h), frame);
      }
      break;
    case 2:
      if (const auto a = peer::DecodeAnswer(frame)) {
        ExpectSame<peer::Answer>(peer::Encode(*a), frame);
      }
      break;
    default:
      if (const auto t = peer::DecodeDataOpen(frame)) {
        ExpectSame<peer::Token>(peer::EncodeDataOpen(*t), frame);
      }
      break;
  }
  return 0;
}
