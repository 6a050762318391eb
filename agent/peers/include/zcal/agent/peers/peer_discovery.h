// Which peers exist: the static list and the DNS name of the `peers:`
// section, resolved into endpoints, minus this host's own addresses. Which
// interface a connection to a peer leaves through is the kernel's answer
// (probes::EgressInterface, zcal/probes/host_facts.h).
//
// DNS is resolved with getaddrinfo(3), so the host's resolver configuration
// (/etc/resolv.conf, nsswitch) applies as for any other program: in a
// Kubernetes pod with host networking that is the node's resolver, and a
// headless Service's name answers with one A/AAAA record per ready agent.
//
// Thread safety: every function is safe to call from any thread; they
// block for as long as the resolver does (the calibration worker calls
// them, never the service's event loop).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/agent/domain/peer_attempt.h"
#include "zcal/agent/peers/peers_config.h"
#include "zcal/common/address.h"
#include "zcal/common/result.h"

namespace zcal::agent {

/// What one discovery produced.
struct Discovery {
  /// The static and the DNS peers, without duplicates and without this
  /// host's own addresses, sorted (IPv4 before IPv6, then address bytes,
  /// then port) so that the order depends neither on the resolver's nor on
  /// the configuration's. IPv4-mapped IPv6 addresses ("::ffff:10.0.0.2")
  /// appear as IPv4.
  std::vector<common::HostPort> peers;
  /// How many candidates were dropped because they are this host's own.
  std::size_t own_excluded = 0;
  DnsFailure dns_failure = DnsFailure::kNone;  ///< kNone also without dns
  /// A sentence for the log when dns_failure != kNone, naming the name and
  /// the resolver's message ("peers.dns zcal.svc:7070: no such name").
  std::string dns_error;
};

/// Resolves `dns` (when its name is not empty) with getaddrinfo, AF_UNSPEC,
/// every A and AAAA record, and merges the result with `static_peers`.
/// Addresses in `own` are excluded (port regardless; own_excluded counts
/// the distinct endpoints dropped). Never fails: a DNS failure leaves the
/// static peers and says why.
Discovery DiscoverPeers(const std::vector<common::HostPort>& static_peers,
                        const DnsPeerName& dns,
                        const std::vector<common::IpAddress>& own);

/// This host's identity for the rendezvous choice of peers: its host name
/// and its non-loopback addresses (OwnAddresses), so that hosts which share
/// a name (containers, network namespaces of one machine) still rank their
/// peers differently.
std::string HostIdentity();

/// Every address of this host's interfaces (getifaddrs(3)), loopback
/// included; kIo with errno text when they cannot be listed.
Result<std::vector<common::IpAddress>> OwnAddresses();


}  // namespace zcal::agent
