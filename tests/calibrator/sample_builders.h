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

}  // namespace zcal::calibrator::testing
