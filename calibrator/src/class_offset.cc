#include "class_offset.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <optional>
#include <string>

#include "zcal/calibrator/depth.h"
#include "zcal/calibrator/stats.h"

namespace zcal::calibrator::detail {

namespace {

// The share of a probe's wall time its sender ran (CPU time over wall
// time): 99-100 % on the discard path's quiet host, less where other
// processes take the CPU (35-65 % at a load average of 10 here). A class
// whose sender ran for less than this share of the stream's waits for
// something the stream does not (a peer's acknowledgements at depth 1),
// and its throughput is not the stream's with a cost added to each send;
// more than one CPU's worth is not one sender's.
constexpr double kRunShareOfStream = 0.8;
constexpr double kMaxRunShare = 1.1;
// The class's own samples the offset rests on, and at how many sizes: its
// shape is checked only where it is seen at two sizes at least.
constexpr std::size_t kMinSamples = 3;
constexpr std::size_t kMinSizes = 2;
// How far a size's offset may lie from the median beyond its noise, as a
// share of the stream's CPU per send there: the cost curves themselves are
// not exact (measured here: 0.3-7 % between sizes on the discard path).
constexpr double kShapeTolerance = 0.05;

double SendsOf(const Sample& s) {
  return s.size_bytes == 0 ? 0 : static_cast<double>(s.bytes) / static_cast<double>(s.size_bytes);
}

double NsPerSend(const Sample& s) { return static_cast<double>(s.cpu_ns) / SendsOf(s); }

bool Usable(const Sample& s, Method method) {
  return s.ok() && s.method == method && s.bytes >= s.size_bytes && s.size_bytes > 0 &&
         s.wall_ns > 0 && s.cpu_ns > 0;
}

double CpuShare(const std::vector<const Sample*>& samples) {
  std::vector<double> shares;
  shares.reserve(samples.size());
  for (const Sample* s : samples) {
    shares.push_back(static_cast<double>(s->cpu_ns) / static_cast<double>(s->wall_ns));
  }
  return Median(shares);
}

std::string Ns(double ns) {
  const long long rounded = std::llround(ns);
  return (rounded > 0 ? "+" : "") + std::to_string(rounded) + " ns";
}

std::string Percent(double share) { return std::to_string(std::llround(share * 100)) + " %"; }

// Neighbouring sizes of the stream class pool their noise into a size's
// reference up to this far apart (the discard path's first class has three
// sizes per octave; the local fit's gate is the same 0.4 octave).
constexpr double kNeighbourOctaves = 0.4;

// One method's usable samples on a path: the class's own, and the stream
// class's with their CPU per send by size, its median there, and the
// reference a class's sample there is taken against.
struct ClassAndStream {
  std::vector<const Sample*> own, stream;
  std::map<std::uint64_t, std::vector<double>> stream_at;
  std::map<std::uint64_t, double> stream_median;
  std::map<std::uint64_t, double> stream_reference;
  /// The baseline's CPU per send by size (its median there).
  std::map<std::uint64_t, double> baseline_median;
};

// The stream's CPU per send at each size it measured: its median there,
// or, where one sample is all it has and it measured a size on either side
// within kNeighbourOctaves, the straight line through the three sizes'
// logs (CPU per send against size) at that size. One sample's noise would
// otherwise enter every difference taken there whole; the line pools it
// with the neighbours' (about a fifth less noise in each difference), and
// the curve's own bend over a third of an octave is under 0.2 %.
std::map<std::uint64_t, double> StreamReference(const ClassAndStream& split) {
  std::map<std::uint64_t, double> reference = split.stream_median;
  if (split.stream_median.size() < 3) return reference;
  for (auto it = std::next(split.stream_median.begin());
       std::next(it) != split.stream_median.end(); ++it) {
    if (split.stream_at.at(it->first).size() != 1) continue;
    const auto below = std::prev(it), above = std::next(it);
    const double x0 = std::log2(static_cast<double>(below->first));
    const double x1 = std::log2(static_cast<double>(it->first));
    const double x2 = std::log2(static_cast<double>(above->first));
    if (x1 - x0 > kNeighbourOctaves || x2 - x1 > kNeighbourOctaves || below->second <= 0 ||
        it->second <= 0 || above->second <= 0) {
      continue;
    }
    const double xs[] = {x0, x1, x2};
    const double ys[] = {std::log(below->second), std::log(it->second), std::log(above->second)};
    const double mean_x = (x0 + x1 + x2) / 3, mean_y = (ys[0] + ys[1] + ys[2]) / 3;
    double sxy = 0, sxx = 0;
    for (int k = 0; k < 3; ++k) {
      sxy += (xs[k] - mean_x) * (ys[k] - mean_y);
      sxx += (xs[k] - mean_x) * (xs[k] - mean_x);
    }
    reference[it->first] = std::exp(mean_y + sxy / sxx * (x1 - mean_x));
  }
  return reference;
}

ClassAndStream SplitByClass(std::span<const Sample> path_samples, Method method,
                            std::uint32_t depth, Method baseline) {
  ClassAndStream split;
  for (const Sample& s : path_samples) {
    if (!Usable(s, method)) continue;
    if (s.depth == depth) split.own.push_back(&s);
    if (s.depth == kStreamDepth) {
      split.stream.push_back(&s);
      split.stream_at[s.size_bytes].push_back(NsPerSend(s));
    }
  }
  for (const auto& [size, at] : split.stream_at) split.stream_median[size] = Median(at);
  split.stream_reference = StreamReference(split);
  std::map<std::uint64_t, std::vector<double>> baseline_at;
  for (const Sample& s : path_samples) {
    if (Usable(s, baseline)) baseline_at[s.size_bytes].push_back(NsPerSend(s));
  }
  for (const auto& [size, costs] : baseline_at) split.baseline_median[size] = Median(costs);
  return split;
}

// The class's samples at sizes the stream class measured, each against the
// stream's reference there: all together, and by size.
struct Differences {
  std::vector<double> all;
  std::map<std::uint64_t, std::vector<double>> at;
};

Differences FromStream(const ClassAndStream& split) {
  Differences d;
  for (const Sample* s : split.own) {
    const auto it = split.stream_reference.find(s->size_bytes);
    if (it == split.stream_reference.end()) continue;
    const double diff = NsPerSend(*s) - it->second;
    d.all.push_back(diff);
    d.at[s->size_bytes].push_back(diff);
  }
  return d;
}

// Why the class's sender is not the stream's plus a cost per send, judged
// by the share of the wall time each ran; nullopt when it is.
std::optional<std::string> RunShareRefusal(const ClassAndStream& split) {
  const double own_share = CpuShare(split.own), stream_share = CpuShare(split.stream);
  if (own_share >= kRunShareOfStream * stream_share &&
      std::max(own_share, stream_share) <= kMaxRunShare) {
    return std::nullopt;
  }
  return "its sender ran for " + Percent(own_share) + " of the wall time, the stream class's for " +
         Percent(stream_share) + ": its throughput is not the stream's with a cost added to each send";
}

// Waiting for completions one at a time costs; it does not save. A class
// that costs clearly less per send than the stream differs from it in
// something else (the stream's larger pool of buffers in the cache, the
// host's load between the two phases: -300 to -450 ns at depth 1 in
// tests/data/depth, recorded at a load average of 10, 30 % of the stream's
// CPU per send), which moving the stream's samples would carry into the
// class. "Clearly": beyond its noise, by more than the curves' own
// inexactness the shape check grants each size (kShapeTolerance of the
// stream's CPU per send at the class's sizes). A class as deep as 16 sends
// is the stream's cost within that (msg_zerocopy at 16 on this VM's discard
// path: -172 to +71 ns against 3.3-4.4 us a send, in 18 runs at 2 s), and
// refusing it there left the class to its own octave grid. Both must hold:
// an estimate below by more than that whose noise reaches 0 is kept, as an
// estimate within its noise of the stream always was, but one whose noise
// reaches only the tolerance is not (-387 +-250 ns at depth 4, where 270 to
// 720 ns above is the rule, put the class's threshold at 6.4 KiB against the
// stream's 11 KiB).
std::optional<std::string> BelowStreamRefusal(const ClassAndStream& split,
                                              const Differences& diffs,
                                              const ClassOffset& offset) {
  std::vector<double> stream_cost;
  for (const auto& [size, at] : diffs.at) stream_cost.push_back(split.stream_median.at(size));
  const double inexact = kShapeTolerance * Median(stream_cost);
  if (offset.ns_per_send + offset.Reach95() >= 0 || offset.ns_per_send >= -inexact) {
    return std::nullopt;
  }
  return "its CPU per send is below the stream class's (" + Ns(offset.ns_per_send) + ", +-" +
         Ns(offset.Reach95()).substr(1) + "; more than the curves' " + Ns(inexact).substr(1) +
         "): waiting for each completion is not what differs between them";
}

// Whether `a` and `b`, two readings of the class's CPU per send at one
// size, both lie clearly on the same side of the baseline's there (`base`):
// further from it than `allowed` each, so that the comparison at that size
// reads the same from either.
bool SameSideOfTheBaseline(double a, double b, double base, double allowed) {
  return (a - base > allowed && b - base > allowed) || (base - a > allowed && base - b > allowed);
}

// The same cost at every size, within each size's noise (`scale`, the
// differences' spread, and the stream's own there) and the curves' own
// inexactness; else why not. A size off it where the class's own figure
// and the moved stream's both lie clearly on one side of the baseline's is
// set aside, not refused (`offset.set_aside` says which): whichever holds
// there, zerocopy wins or loses at that size alike, and the threshold lies
// where the comparison is close, which the sizes that agree cover. On this
// VM's discard path 8 of 18 runs at 2 s had such a size (1024 bytes at
// depth 1: +2097 ns against +1640 ns over all sizes, where copy costs 2.9
// us a send and msg_zerocopy 5 us or more), and refusing the model for it
// left the class to its own octave grid and the per-size rule. At least
// kMinSizes sizes must agree.
std::optional<std::string> ShapeRefusal(const ClassAndStream& split, const Differences& diffs,
                                        ClassOffset& offset, double scale) {
  std::size_t agree = 0;
  std::string set_aside;
  for (const auto& [size, at] : diffs.at) {
    const std::vector<double>& base = split.stream_at.at(size);
    const double noise = std::sqrt(scale * scale / static_cast<double>(at.size()) +
                                   (base.size() > 1 ? std::pow(ScaledMad(base), 2) /
                                                          static_cast<double>(base.size())
                                                    : 0.0));
    const double allowed = 3 * noise + kShapeTolerance * split.stream_median.at(size);
    const double here = Median(at);
    if (std::abs(here - offset.ns_per_send) <= allowed) {
      ++agree;
      continue;
    }
    const std::string off = Ns(here) + " at " + std::to_string(size) + " bytes against " +
                            Ns(offset.ns_per_send) + " over all its sizes (allowed: " +
                            Ns(allowed).substr(1) + " either way)";
    const auto baseline = split.baseline_median.find(size);
    const double reference = split.stream_reference.at(size);
    if (baseline == split.baseline_median.end() ||
        !SameSideOfTheBaseline(reference + here, reference + offset.ns_per_send, baseline->second,
                               allowed)) {
      return "its CPU per send over the stream class's is not the same at every size: " + off;
    }
    set_aside += (set_aside.empty() ? "" : "; ") + off + ", where its baseline costs " +
                 Ns(baseline->second).substr(1) + " a send";
  }
  if (!set_aside.empty() && agree < kMinSizes) {
    return "its CPU per send over the stream class's is the same at " + std::to_string(agree) +
           " sizes only (at least " + std::to_string(kMinSizes) + "): " + set_aside;
  }
  offset.set_aside = std::move(set_aside);
  return std::nullopt;
}

}  // namespace

std::optional<ClassOffset> MeasureClassOffset(std::span<const Sample> path_samples, Method method,
                                              std::uint32_t depth, Method baseline) {
  if (depth == kStreamDepth || !IsZerocopy(method)) return std::nullopt;
  const ClassAndStream split = SplitByClass(path_samples, method, depth, baseline);
  if (split.own.empty() || split.stream.empty()) return std::nullopt;
  const Differences diffs = FromStream(split);
  ClassOffset offset;
  offset.samples = diffs.all.size();
  offset.sizes = diffs.at.size();
  if (offset.samples < kMinSamples || offset.sizes < kMinSizes) {
    offset.rejected = "too few of its samples at sizes the stream class measured (" +
                      std::to_string(offset.samples) + " at " + std::to_string(offset.sizes) +
                      " sizes; at least " + std::to_string(kMinSamples) + " at " +
                      std::to_string(kMinSizes) + ")";
    return offset;
  }
  offset.ns_per_send = Median(diffs.all);
  const double scale = ScaledMad(diffs.all);
  offset.standard_error =
      kMedianEfficiency * scale / std::sqrt(static_cast<double>(diffs.all.size()));
  std::optional<std::string> refused = RunShareRefusal(split);
  if (!refused) refused = BelowStreamRefusal(split, diffs, offset);
  if (!refused) refused = ShapeRefusal(split, diffs, offset, scale);
  if (refused) offset.rejected = std::move(*refused);
  return offset;
}

std::vector<Sample> MovedIntoClass(std::span<const Sample> path_samples, Method method,
                                   std::uint32_t depth, double ns_per_send) {
  std::vector<Sample> moved;
  if (!IsZerocopy(method) || depth == kStreamDepth) return moved;  // no class to move into
  for (const Sample& s : path_samples) {
    if (s.depth != kStreamDepth || !Usable(s, method)) continue;
    const double added = ns_per_send * SendsOf(s);
    const double cpu = static_cast<double>(s.cpu_ns) + added;
    if (cpu < 1) continue;
    // The sender ran for the same share of the longer (or shorter) probe:
    // its throughput follows its CPU.
    const double wall = static_cast<double>(s.wall_ns) * cpu / static_cast<double>(s.cpu_ns);
    Sample m = s;
    m.depth = depth;
    m.cpu_ns = static_cast<std::uint64_t>(std::llround(cpu));
    m.wall_ns = static_cast<std::uint64_t>(std::llround(wall));
    if (m.host_cpu_ns) {
      m.host_cpu_ns = static_cast<std::uint64_t>(
          std::max(0.0, std::round(static_cast<double>(*m.host_cpu_ns) + added)));
    }
    moved.push_back(std::move(m));
  }
  return moved;
}

}  // namespace zcal::calibrator::detail
