#include "zcal/probes/send/probe.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "zcal/probes/host/cpu_accounting.h"
#include "zcal/probes/send/buffer_pool.h"
#include "zcal/probes/send/connect.h"
#include "zcal/probes/send/probe_runner.h"
#include "zcal/probes/send/sender.h"
#include "zcal/probes/types/target.h"

namespace zcal::probes {

namespace {

using calibrator::Method;
using calibrator::Sample;
using calibrator::SampleStatus;

static_assert(calibrator::kMaxDepth <= kMaxPoolBuffers,
              "a depth class is never deeper than the deepest pool");

Result<std::unique_ptr<Sender>> MakeSender(Method method, int fd, const BufferPool& pool,
                                           std::uint32_t depth) {
  switch (method) {
    case Method::kCopy: return MakeCopySender(fd, pool);
    case Method::kMsgZerocopy: return MakeMsgZerocopySender(fd, pool, depth);
    case Method::kUringSend: return MakeUringSendSender(fd, pool);
    case Method::kUringSendZc: return MakeUringSendZcSender(fd, pool, depth);
    case Method::kUringSendZcFixed: return MakeUringSendZcFixedSender(fd, pool, depth);
  }
  return Fail(Errc::kInvalidArgument, "unknown method");
}

ProbeOutcome Failed(Sample sample, const Error& error,
                    PeerFailure failure = PeerFailure::kLocalError) {
  sample.error = error.message;
  if (error.code == Errc::kUnsupported) {
    sample.status = SampleStatus::kUnsupported;
    return {std::move(sample), std::nullopt};
  }
  sample.status = SampleStatus::kFailed;
  return {std::move(sample), failure};
}

}  // namespace

std::string MemlockLimitText() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_MEMLOCK, &limit) != 0) return "unknown";
  if (limit.rlim_cur == RLIM_INFINITY) return "unlimited";
  return std::to_string(limit.rlim_cur / 1024) + " KiB";
}

std::uint32_t PoolBuffers(Method method, std::uint64_t size_bytes,
                          std::uint64_t in_flight_bytes) {
  if (in_flight_bytes == 0) {
    in_flight_bytes =
        calibrator::IsZerocopy(method) ? kZerocopyInFlightBytes : kCopyingInFlightBytes;
  }
  const std::uint64_t wanted = in_flight_bytes / std::max<std::uint64_t>(size_bytes, 1);
  return static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>(wanted, kMinPoolBuffers, kMaxPoolBuffers));
}

Sample RunProbe(const ProbeOptions& options) {
  return ProbeOn(options, [&options] { return ConnectTcp(options.sink); }).sample;
}

Sample RunProbeOn(const ProbeOptions& options,
                  const std::function<Result<common::UniqueFd>()>& connect) {
  return ProbeOn(options, [&connect]() -> Result<common::UniqueFd, PeerError> {
           auto fd = connect();
           if (!fd) return FailPeer(PeerFailure::kLocalError, fd.error().code, fd.error().message);
           return std::move(*fd);
         })
      .sample;
}

ProbeOutcome ProbeOn(const ProbeOptions& options, const ProbeConnect& connect,
                     BufferArena* arena) {
  Sample sample;
  sample.path = options.path;
  sample.method = options.method;
  sample.size_bytes = options.size_bytes;
  sample.repeat = options.repeat;
  const bool zerocopy = calibrator::IsZerocopy(options.method);
  sample.depth = zerocopy ? options.depth : calibrator::kStreamDepth;
  const std::string where = std::string(calibrator::MethodName(options.method)) +
                            " at " + std::to_string(options.size_bytes) + " bytes";
  if (options.size_bytes == 0 || options.size_bytes > (1ULL << 30)) {
    return Failed(sample, {Errc::kInvalidArgument,
                           where + ": message size must be 1 byte to 1 GiB"});
  }
  if (zerocopy && options.depth > calibrator::kMaxDepth) {
    return Failed(sample, {Errc::kInvalidArgument,
                           where + ": depth " + std::to_string(options.depth) +
                               " is beyond " + std::to_string(calibrator::kMaxDepth)});
  }
  const std::uint32_t count =
      std::max(PoolBuffers(options.method, options.size_bytes, options.in_flight_bytes),
               zerocopy ? options.depth : 0U);
  auto pool = arena != nullptr
                  ? arena->Pool(count, options.size_bytes, options.buffers, options.root)
                  : BufferPool::Allocate(count, options.size_bytes, options.buffers,
                                         options.root);
  if (!pool) return Failed(sample, pool.error());
  auto socket = connect();
  if (!socket) return Failed(sample, socket.error(), socket.error().failure);
  auto sender = MakeSender(options.method, socket->get(), **pool, sample.depth);
  if (!sender) return Failed(sample, sender.error());

  const CpuSnapshot cpu_before = CpuSnapshot::Before(options.root);
  const auto start = std::chrono::steady_clock::now();
  const StopCondition stop(start + options.duration, options.max_bytes, options.cancel);
  auto counters = (*sender)->Run(stop);
  const auto end = std::chrono::steady_clock::now();
  const CpuSnapshot cpu_after = CpuSnapshot::After(options.root);
  if (!counters) return Failed(sample, counters.error(), counters.error().failure);

  sample.bytes = counters->bytes;
  sample.wall_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
  sample.cpu_ns = cpu_after.thread_ns - cpu_before.thread_ns;
  if (cpu_before.host_busy_ns && cpu_after.host_busy_ns &&
      *cpu_after.host_busy_ns >= *cpu_before.host_busy_ns) {
    sample.host_cpu_ns = *cpu_after.host_busy_ns - *cpu_before.host_busy_ns;
  }
  sample.zc_completions = counters->zc_completions;
  sample.zc_copied = counters->zc_copied;
  sample.enobufs = counters->enobufs;
  if (sample.bytes == 0) {
    return Failed(sample,
                  {Errc::kFailed, where + ": no byte was sent in " +
                                      std::to_string(sample.wall_ns / 1000000) + " ms"},
                  PeerFailure::kTimeout);
  }
  return {std::move(sample), std::nullopt};
}

}  // namespace zcal::probes
