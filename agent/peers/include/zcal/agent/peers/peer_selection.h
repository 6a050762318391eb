// Which peers a host probes in a calibration round, decided by each host
// alone (nothing central), so that the choices spread over the fleet and
// every peer gets its turn (docs/peers.md, "Choosing peers").
//
// Each host ranks the peers by a rendezvous (highest-random-weight) score of
// (its own identity, the peer): an order of its own, independent of every
// other host's, in which a peer that joins or leaves moves no other peer
// relative to the rest. Round r then takes the K peers at ranks
// [r*K, r*K + K) modulo the number of peers. So one host probes every peer
// once in ceil(N/K) rounds, and since the orders are independent, a sink is
// asked by about K hosts per round (binomially; bench and test print the
// most).
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "zcal/common/address.h"

namespace zcal::agent {

/// The rendezvous score of `peer` for the host `identity` (64 bits, well
/// mixed). Equal inputs give equal scores on every host and every run.
std::uint64_t RendezvousScore(std::string_view identity, const common::HostPort& peer);

/// Indices into `peers`, highest score first; ties (equal scores) by
/// address so that the order is total.
std::vector<std::size_t> RankPeers(std::string_view identity,
                                   std::span<const common::HostPort> peers);

/// Ranks (0-based, into RankPeers' order) that round `round` takes: `k`
/// consecutive ranks from (round * k) mod n, wrapping; all n (in order)
/// when k >= n, none when n == 0 or k == 0.
std::vector<std::size_t> RoundWindow(std::uint64_t round, std::size_t n, std::size_t k);

/// The peers (indices into `peers`) that host `identity` probes in round
/// `round`, in rank order: RoundWindow over RankPeers.
std::vector<std::size_t> ChoosePeers(std::string_view identity, std::uint64_t round,
                                     std::span<const common::HostPort> peers, std::size_t k);

}  // namespace zcal::agent
