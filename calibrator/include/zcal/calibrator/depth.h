// The depth at which a connection sends: how many of its zerocopy sends may
// be in flight (sent, their completion not yet reaped). A crossover depends
// on it: at depth 1 every send pays its own completion; a bulk stream's
// completions arrive merged and share it (docs/calibrator.md, "Depth").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/common/result.h"

namespace zcal::calibrator {

/// The `stream` class: as many sends in flight as the sender's buffer pool
/// holds (each buffer reused only once the kernel released it), the way a
/// bulk stream sends: 2 MiB of buffers, 8 to 128 of them by message size
/// (probes/send/probe.h). Probes before depths existed all sent this way.
inline constexpr std::uint32_t kStreamDepth = 0;

/// The largest numeric depth a class may name: the most buffers a probe's
/// pool holds, so that a class is never deeper than `stream`.
inline constexpr std::uint32_t kMaxDepth = 128;

/// At most this many classes are calibrated and published (each class
/// multiplies the probes of a calibration and the entries of the segment).
inline constexpr std::size_t kMaxDepthClasses = 8;

/// "1", "4", "16", "stream".
std::string DepthName(std::uint32_t depth);

/// A depth as written in the configuration, on the command line and in the
/// samples CSV: "stream", or a whole number from 1 to kMaxDepth.
/// Errc::kInvalidArgument naming what was wrong ("depth: 0 is not a depth;
/// ...").
Result<std::uint32_t> ParseDepth(std::string_view text);

/// A list of classes, comma-separated ("1,4,16,stream"): each ParseDepth,
/// none twice, at most kMaxDepthClasses. Returned in calibration order:
/// numeric classes ascending, `stream` last. Errc::kInvalidArgument.
Result<std::vector<std::uint32_t>> ParseDepthClasses(std::string_view text);

/// Checks a list given as numbers (a configuration's): the rules of
/// ParseDepthClasses, and returns it in the same order.
Result<std::vector<std::uint32_t>> NormalizeDepthClasses(std::vector<std::uint32_t> classes);

/// The classes calibrated by default on the discard and peer paths: one
/// message in flight, gRPC's default limit of pending zerocopy sends, a
/// moderately deep queue, and a bulk stream.
std::vector<std::uint32_t> DefaultDepthClasses();

/// From this many sends in flight on, a connection sends as a stream does:
/// the fewest the stream probes keep in flight at sizes up to 64 KiB (2 MiB
/// of buffers). libzcal's ZCAL_DEPTH_STREAM_FROM, the same rule.
inline constexpr std::uint32_t kStreamDepthFrom = 32;

/// The class a connection at `depth` sends in (0 is taken as 1): `stream`
/// from kStreamDepthFrom on when it is a class, otherwise the largest
/// numeric class at or below the depth (the smallest class when none is).
/// A class below the depth, not above: it was measured with fewer sends in
/// flight, so with a cost per completion at least the connection's, and
/// its threshold errs towards copying. libzcal's zcal_depth_class for the
/// published classes 1, 4, 16 and stream. `classes` as returned by
/// ParseDepthClasses; kStreamDepth when it is empty.
std::uint32_t ClassOf(std::uint32_t depth, const std::vector<std::uint32_t>& classes);

}  // namespace zcal::calibrator
