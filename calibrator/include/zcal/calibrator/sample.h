// One measurement: a probe of one method at one message size on one path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "zcal/calibrator/method.h"

namespace zcal::calibrator {

/// Whether a probe produced a measurement.
enum class SampleStatus : std::uint8_t {
  kOk = 0,           ///< the numbers are a valid measurement
  kUnsupported = 1,  ///< the method cannot run here (error says why)
  kFailed = 2,       ///< the probe ran and failed (error says why)
};

/// A probe's result. Counters are totals over the probe's run.
struct Sample {
  std::string path = "default";  ///< "loopback", a peer name, or "default"
  Method method = Method::kCopy;
  std::uint64_t size_bytes = 0;  ///< bytes per send call (message size)
  /// Zerocopy sends the probe let be in flight (depth.h): 1 to kMaxDepth,
  /// or kStreamDepth (0) for as many as its buffer pool holds. The copying
  /// baselines have no completions to wait for and are probed at stream.
  std::uint32_t depth = 0;
  std::uint32_t repeat = 0;      ///< index of this repeat, for the record
  /// The probe's place in the calibration's order (0 first), set as it is
  /// recorded (SweepPlanner::Record); nullopt for samples of unknown order
  /// (a pasted table). Where every sample of a path has one, the decision
  /// measures how the host's speed moved between probes (HostDrift).
  std::optional<std::uint64_t> seq;
  std::uint64_t bytes = 0;       ///< bytes moved during the probe
  std::uint64_t wall_ns = 0;     ///< wall-clock duration of the probe
  std::uint64_t cpu_ns = 0;      ///< sender process user + system time
  std::optional<std::uint64_t> host_cpu_ns;  ///< busy time of all CPUs
  std::uint64_t zc_completions = 0;  ///< zerocopy completions reaped
  std::uint64_t zc_copied = 0;       ///< ... of which the kernel copied
  std::uint64_t enobufs = 0;         ///< sends retried after ENOBUFS
  SampleStatus status = SampleStatus::kOk;
  std::string error;  ///< reason when status is not kOk

  bool ok() const { return status == SampleStatus::kOk; }
  /// Bytes per second; 0 when wall_ns is 0.
  double ThroughputBytesPerSecond() const;
  /// Sender CPU nanoseconds spent per byte moved; 0 when no bytes moved.
  double CpuNsPerByte() const;
  /// Share of zerocopy completions the kernel reported as copied, in [0,1];
  /// nullopt when there were no completions.
  std::optional<double> CopiedFraction() const;
};

}  // namespace zcal::calibrator
