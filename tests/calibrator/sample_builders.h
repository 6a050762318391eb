// Builders for hand-made sample tables.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "zcal/calibrator/sample.h"

namespace zcal::calibrator::testing {

/// One sample as a benchmark table row: MB/s and CPU percent of one core,
/// read as one second of sending.
Sample Row(Method method, std::uint64_t size, double mb_per_s, double cpu_pct,
           double copied_pct = -1);

/// A table of rows for one zerocopy method and its baseline, one size per
/// entry: {size, zc MB/s, zc cpu %, base MB/s, base cpu %}.
struct Pair {
  std::uint64_t size;
  double zc_mbps, zc_cpu, base_mbps, base_cpu;
};
std::vector<Sample> Table(Method zerocopy, Method baseline,
                          std::initializer_list<Pair> rows);

/// A host whose senders are bound by their CPU (the discard path), in ns
/// of CPU a send: copy 500 + 0.10/B, zerocopy at stream 1500 + 0.02/B. With
/// the 3 % margin the stream class crosses over at 13182 bytes.
double CpuBoundCopyNs(double size);
double CpuBoundStreamZcNs(double size);

/// One probe of one second on path "discard" at `ns_per_send` a send, its
/// CPU `cpu_share` of the wall time.
Sample CpuBoundProbe(Method method, std::uint64_t size, std::uint32_t depth, double ns_per_send,
                     double cpu_share = 1.0);

}  // namespace zcal::calibrator::testing
