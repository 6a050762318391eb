// Encoding a table of PublishedEntry into the segment's fixed-width
// entries, with every check a reader would otherwise fail on.
#include "shm_encode.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <tuple>

#include "zcal/calibrator/depth.h"

namespace zcal::agent {
namespace {

using calibrator::Method;
using calibrator::Reason;
using calibrator::Verdict;

static_assert(static_cast<int>(ScopeKind::kHostDefault) == ZCAL_SCOPE_HOST_DEFAULT);
static_assert(static_cast<int>(ScopeKind::kLoopback) == ZCAL_SCOPE_LOOPBACK);
static_assert(static_cast<int>(ScopeKind::kPeer) == ZCAL_SCOPE_PEER);
static_assert(static_cast<int>(ScopeKind::kInterface) == ZCAL_SCOPE_INTERFACE);
static_assert(static_cast<int>(ScopeKind::kDiscard) == ZCAL_SCOPE_DISCARD);
// The calibrator and libzcal place a depth between classes by one rule.
static_assert(calibrator::kStreamDepthFrom == ZCAL_DEPTH_STREAM_FROM);
static_assert(calibrator::kStreamDepth == ZCAL_DEPTH_STREAM);
static_assert(static_cast<int>(HostDefaultSource::kPeers) == ZCAL_HOST_DEFAULT_PEERS);
static_assert(static_cast<int>(HostDefaultSource::kEstimated) == ZCAL_HOST_DEFAULT_ESTIMATED);
static_assert(static_cast<int>(HostDefaultSource::kNoPath) == ZCAL_HOST_DEFAULT_NONE_NO_PATH);
static_assert(static_cast<int>(HostDefaultSource::kIommuTranslates) ==
              ZCAL_HOST_DEFAULT_NONE_IOMMU);
static_assert(static_cast<int>(HostDefaultSource::kIommuUnknown) ==
              ZCAL_HOST_DEFAULT_NONE_IOMMU_UNKNOWN);
static_assert(static_cast<int>(HostDefaultSource::kDisabled) ==
              ZCAL_HOST_DEFAULT_NONE_DISABLED);
// Methods, verdicts and reasons: pinned to their codes where their names
// are (calibrator/src/method.cc, decision.cc).
static_assert(static_cast<int>(DepthClass::kStream) == ZCAL_DEPTH_STREAM);
static_assert(static_cast<int>(DepthClass::k1) == ZCAL_DEPTH_1);
static_assert(static_cast<int>(DepthClass::k4) == ZCAL_DEPTH_4);
static_assert(static_cast<int>(DepthClass::k16) == ZCAL_DEPTH_16);
static_assert(std::size(kDepthClasses) == ZCAL_DEPTH_CLASSES);
static_assert(sizeof(zcal_shm_entry) % 8 == 0 && sizeof(zcal_shm_header) % 8 == 0);

// Where an entry is, for a message; built only on failure: publishing is
// on the agent's hot path in tests.
std::string EntryWhere(const std::string& name, std::size_t index) {
  return "segment " + name + ": entry " + std::to_string(index);
}

// A peer's prefix: family, the network's address (host bits cleared, so
// that readers match on the network alone) and length.
Result<void> EncodePeer(const PublishedEntry& in, const std::string& name, std::size_t index,
                        zcal_shm_entry& out) {
  unsigned max_prefix = 0;
  if (inet_pton(AF_INET, in.address.c_str(), out.address) == 1) {
    out.family = ZCAL_FAMILY_IPV4;
    max_prefix = 32;
  } else if (inet_pton(AF_INET6, in.address.c_str(), out.address) == 1) {
    out.family = ZCAL_FAMILY_IPV6;
    max_prefix = 128;
  } else {
    return Fail(Errc::kInvalidArgument,
                EntryWhere(name, index) + ": peer address \"" + in.address +
                    "\" is not a numeric IPv4 or IPv6 address");
  }
  if (in.prefix_len > max_prefix) {
    return Fail(Errc::kInvalidArgument,
                EntryWhere(name, index) + ": prefix length " + std::to_string(in.prefix_len) +
                    " exceeds " + std::to_string(max_prefix) + " for " + in.address);
  }
  out.prefix_len = in.prefix_len;
  for (unsigned bit = in.prefix_len; bit < max_prefix; ++bit)
    out.address[bit / 8] &= static_cast<std::uint8_t>(~(0x80u >> (bit % 8)));
  return {};
}

// The value readers act on: the threshold (required by its verdict) and
// the confidence in parts per million.
Result<void> EncodeValue(const PublishedEntry& in, const std::string& name, std::size_t index,
                         zcal_shm_entry& out) {
  if (in.estimated) out.entry_flags |= ZCAL_ENTRY_ESTIMATED;
  if (in.contradicted) out.entry_flags |= ZCAL_ENTRY_CONTRADICTED;
  if (in.verdict == Verdict::kThreshold && !in.threshold_bytes) {
    return Fail(Errc::kInvalidArgument,
                EntryWhere(name, index) + ": verdict threshold without threshold_bytes");
  }
  if (in.threshold_bytes) {
    out.entry_flags |= ZCAL_ENTRY_HAS_THRESHOLD;
    out.threshold_bytes = *in.threshold_bytes;
  }
  out.confidence_ppm = ZCAL_CONFIDENCE_UNKNOWN;
  if (in.confidence) {
    const double c = *in.confidence;
    if (!(c >= 0.0 && c <= 1.0)) {
      return Fail(Errc::kInvalidArgument, EntryWhere(name, index) + ": confidence " +
                                              std::to_string(c) + " is outside [0,1]");
    }
    out.confidence_ppm = static_cast<std::uint32_t>(std::lround(c * 1e6));
  }
  return {};
}

// Encodes entry `index` of segment `name`.
Result<zcal_shm_entry> Encode(const PublishedEntry& in, const std::string& name,
                              std::size_t index) {
  zcal_shm_entry out{};
  out.scope = static_cast<std::uint8_t>(in.scope);
  out.method = static_cast<std::uint8_t>(in.method);
  out.verdict = static_cast<std::uint8_t>(in.verdict);
  out.reason = static_cast<std::uint8_t>(in.reason);
  out.depth_class = static_cast<std::uint16_t>(in.depth);
  out.measured_at_ns = in.measured_at_ns;
  out.fingerprint = in.fingerprint;
  switch (in.scope) {
    case ScopeKind::kPeer:
      if (auto ok = EncodePeer(in, name, index, out); !ok) return tl::unexpected(ok.error());
      break;
    case ScopeKind::kInterface:
      if (in.interface.empty() || in.interface.size() >= ZCAL_IFNAME_SIZE) {
        return Fail(Errc::kInvalidArgument,
                    EntryWhere(name, index) + ": interface name \"" + in.interface +
                        "\" must be 1 to 15 bytes");
      }
      std::memcpy(out.interface, in.interface.data(), in.interface.size());
      break;
    case ScopeKind::kHostDefault:
    case ScopeKind::kLoopback:
    case ScopeKind::kDiscard:
      break;
  }
  if (auto ok = EncodeValue(in, name, index, out); !ok) return tl::unexpected(ok.error());
  return out;
}

// What makes two entries the same for a reader: every byte before the
// threshold (scope, method, family, prefix, address, interface), with the
// verdict, reason and flags masked out; then the depth class.
struct EntryKey {
  std::array<std::uint8_t, offsetof(zcal_shm_entry, threshold_bytes)> bytes;
  std::uint16_t depth_class;
  std::size_t index;
};
EntryKey KeyOf(const zcal_shm_entry& e, std::size_t index) {
  EntryKey key{};
  std::memcpy(key.bytes.data(), &e, key.bytes.size());
  key.bytes[offsetof(zcal_shm_entry, verdict)] = 0;
  key.bytes[offsetof(zcal_shm_entry, reason)] = 0;
  key.bytes[offsetof(zcal_shm_entry, entry_flags)] = 0;
  key.bytes[offsetof(zcal_shm_entry, entry_flags) + 1] = 0;
  key.depth_class = e.depth_class;
  key.index = index;
  return key;
}

}  // namespace

Result<std::vector<zcal_shm_entry>> EncodeTable(std::span<const PublishedEntry> entries,
                                                const std::string& name) {
  std::vector<zcal_shm_entry> encoded;
  encoded.reserve(entries.size());
  std::vector<EntryKey> keys;
  keys.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    auto entry = Encode(entries[i], name, i);
    if (!entry) return tl::unexpected(entry.error());
    encoded.push_back(*entry);
    keys.push_back(KeyOf(*entry, i));
  }
  // The stream entry (class 0) sorts first among those of its scope and method.
  std::sort(keys.begin(), keys.end(), [](const EntryKey& a, const EntryKey& b) {
    return std::tie(a.bytes, a.depth_class, a.index) <
           std::tie(b.bytes, b.depth_class, b.index);
  });
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const bool same_scope = i > 0 && keys[i].bytes == keys[i - 1].bytes;
    if (same_scope && keys[i].depth_class == keys[i - 1].depth_class) {
      return Fail(Errc::kInvalidArgument,
                  "segment " + name + ": entries " + std::to_string(keys[i - 1].index) +
                      " and " + std::to_string(keys[i].index) +
                      " have the same scope, method and depth class; publish one of them");
    }
    // A reader of ABI minor 1 takes the first entry of a scope and method
    // for its answer: without a stream entry it would take another class's.
    if (!same_scope && keys[i].depth_class != ZCAL_DEPTH_STREAM) {
      return Fail(Errc::kInvalidArgument,
                  "segment " + name + ": entry " + std::to_string(keys[i].index) +
                      " (depth class " +
                      std::string(DepthClassName(entries[keys[i].index].depth)) +
                      ") has no stream entry of its scope and method; publish the "
                      "stream result too");
    }
  }
  // Every stream entry before every other class: readers of minor 1 match
  // the first entry of a scope and method, so they find the stream's.
  std::stable_partition(encoded.begin(), encoded.end(), [](const zcal_shm_entry& e) {
    return e.depth_class == ZCAL_DEPTH_STREAM;
  });
  return encoded;
}

}  // namespace zcal::agent
