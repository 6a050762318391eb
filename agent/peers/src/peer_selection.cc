#include "zcal/agent/peers/peer_selection.h"

#include <algorithm>
#include <numeric>

#include "zcal/common/text.h"

namespace zcal::agent {

namespace {

// FNV-1a spreads short inputs poorly over the high bits; the finalizer of
// splitmix64 makes every input bit affect every output bit, which is what
// ranking by score needs.
std::uint64_t Mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace

std::uint64_t RendezvousScore(std::string_view identity, const common::HostPort& peer) {
  // The identity, a separator no identity contains, then the endpoint's
  // canonical spelling.
  std::uint64_t hash = common::Fnv1a(identity);
  hash = common::Fnv1a(std::string_view("\n", 1), hash);
  hash = common::Fnv1a(common::ToString(peer), hash);
  return Mix(hash);
}

std::vector<std::size_t> RankPeers(std::string_view identity,
                                   std::span<const common::HostPort> peers) {
  std::vector<std::uint64_t> scores(peers.size());
  for (std::size_t i = 0; i < peers.size(); ++i) scores[i] = RendezvousScore(identity, peers[i]);
  std::vector<std::size_t> order(peers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (scores[a] != scores[b]) return scores[a] > scores[b];
    return common::ToString(peers[a]) < common::ToString(peers[b]);
  });
  return order;
}

std::vector<std::size_t> RoundWindow(std::uint64_t round, std::size_t n, std::size_t k) {
  std::vector<std::size_t> ranks;
  if (n == 0 || k == 0) return ranks;
  if (k >= n) {
    for (std::size_t i = 0; i < n; ++i) ranks.push_back(i);
    return ranks;
  }
  const std::size_t take = k;
  // (round * k) mod n without overflow for any round.
  const std::size_t start = static_cast<std::size_t>(
      ((round % n) * (k % n)) % n);
  for (std::size_t i = 0; i < take; ++i) ranks.push_back((start + i) % n);
  return ranks;
}

std::vector<std::size_t> ChoosePeers(std::string_view identity, std::uint64_t round,
                                     std::span<const common::HostPort> peers, std::size_t k) {
  const std::vector<std::size_t> order = RankPeers(identity, peers);
  std::vector<std::size_t> chosen;
  for (std::size_t rank : RoundWindow(round, peers.size(), k)) chosen.push_back(order[rank]);
  return chosen;
}

}  // namespace zcal::agent
