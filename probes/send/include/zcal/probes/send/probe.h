// A probe: one method, one message size, one TCP connection to a sink, for a
// bounded time or byte count, yielding one calibrator sample.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "zcal/calibrator/depth.h"
#include "zcal/calibrator/method.h"
#include "zcal/calibrator/sample.h"
#include "zcal/common/address.h"
#include "zcal/probes/send/buffer_pool.h"

namespace zcal::probes {

/// Bytes of message buffers a zerocopy probe keeps in flight by default:
/// enough that completions, not the pool, limit the rate, and small enough
/// that the pinned pages fit the default 8 MiB locked-memory limit of an
/// unprivileged user.
inline constexpr std::uint64_t kZerocopyInFlightBytes = 2 * 1024 * 1024;
/// The same for the copying methods, whose buffers are free again as soon as
/// the kernel copied them: 16 requests of 64 KiB, as batched io_uring
/// senders keep.
inline constexpr std::uint64_t kCopyingInFlightBytes = 1024 * 1024;

/// Bounds on the number of buffers in the pool, whatever the message size.
inline constexpr std::uint32_t kMinPoolBuffers = 8;
inline constexpr std::uint32_t kMaxPoolBuffers = 128;

/// The most a probe's pool takes at the default in-flight bytes, with each
/// buffer rounded up to the pool's 64-byte alignment: what a calibration's
/// BufferArena maps at its first probe (deeper classes with large messages
/// may still grow it).
inline constexpr std::size_t kPoolReserveBytes = kZerocopyInFlightBytes + kMaxPoolBuffers * 64;

struct ProbeOptions {
  calibrator::Method method = calibrator::Method::kCopy;
  std::uint64_t size_bytes = 64 * 1024;  ///< bytes per send call, >= 1
  /// Zerocopy sends in flight at most (calibrator/depth.h): 1 to kMaxDepth,
  /// or kStreamDepth for as many as the pool holds. The pool then holds at
  /// least `depth` buffers. Ignored by the copying methods, whose samples
  /// say kStreamDepth.
  std::uint32_t depth = calibrator::kStreamDepth;
  std::uint32_t repeat = 0;              ///< copied into the sample
  std::string path = "default";          ///< copied into the sample
  common::HostPort sink;                 ///< where to connect (TCP)
  /// How long to send. The probe stops issuing sends then, and waits (at
  /// most ~1 s more) for the completions of what is in flight.
  std::chrono::nanoseconds duration = std::chrono::milliseconds(100);
  std::uint64_t max_bytes = 0;  ///< stop after this many bytes; 0 = no cap
  /// Bytes of buffers in flight; 0 = the method's default (above).
  std::uint64_t in_flight_bytes = 0;
  /// When set to true by another thread, the probe stops within ~1 s and
  /// returns kFailed with the error "cancelled".
  const std::atomic<bool>* cancel = nullptr;
  /// The memory of the buffers: 4 KiB pages, or 2 MiB huge pages (the
  /// probe fails with kUnsupported and BufferPool::Allocate's sentence
  /// when none can be had). Not in the sample: the caller knows it.
  BufferMemory buffers = BufferMemory::kPages;
  /// sysfs/procfs root for host CPU time (/proc/stat) and, with huge pages,
  /// what the host reserved (BufferPool::Allocate).
  std::string root = "/";
};

/// Number of buffers of `size_bytes` a probe of `method` keeps in flight
/// (`in_flight_bytes` 0 = the method's default), within the bounds above.
std::uint32_t PoolBuffers(calibrator::Method method, std::uint64_t size_bytes,
                          std::uint64_t in_flight_bytes = 0);

/// Runs one probe. Never throws and never returns an error: a method that
/// cannot run here yields status kUnsupported, a probe that ran and failed
/// (connection refused, peer gone, send error) kFailed, each with a sentence
/// in `error`. On success:
///  - bytes: bytes the kernel accepted (what the sink receives);
///  - wall_ns: from the first send to the last completion reaped;
///  - cpu_ns: user + system time of the sending thread over that window
///    (the sink's work on another thread is not included; on loopback the
///    kernel charges the receive path to the sender, alike for all methods);
///  - host_cpu_ns: busy time of all CPUs over the window, from /proc/stat
///    (clock-tick resolution), absent when unreadable;
///  - zc_completions / zc_copied: zerocopy completions reaped, and those
///    the kernel reported as copied; enobufs: sends retried after ENOBUFS.
calibrator::Sample RunProbe(const ProbeOptions& options);

}  // namespace zcal::probes
