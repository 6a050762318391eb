// The host's speed within one calibration (drift.h).
//
// A probe's cost is the cost of its (method, depth, size) times the host's
// speed at the time it ran. The host's speed moves: a neighbour on the VM
// comes or goes, and a calibration of 2 s on the discard path has been seen
// to get a quarter cheaper from one probe to the next and stay there
// (2026-12-07). The samples of a (method, depth, size) probed before and
// after such a step then scatter by a quarter, and a depth class probed
// after it is compared with baselines probed before it: its zerocopy looked
// cheaper than the stream's, and the class was published as `always`.
//
// The two effects are told apart by the samples themselves: in log cost,
// each sample is its group's effect plus the host's level when it ran. A
// level is measured only by the samples of groups probed in more than one
// block of kDriftBlock probes (probed at times apart): the running median
// of their residuals from their groups' effects, the effects refitted on
// the levels, a few rounds (a median polish along the probe order, robust
// to the odd slow probe, and one that keeps a step a step). A sample of a
// group probed at one time only (a depth class's own probes, each size
// once) takes the level of the measured samples before it: the speed the
// host had when last measured.
#include "drift.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "zcal/calibrator/stats.h"

namespace zcal::calibrator::detail {

namespace {

// Rounds of median polish: the levels settle within a few; more cost
// little (a calibration has a few hundred samples).
constexpr int kPolishRounds = 20;
// Linked samples a level is the median of: a step in the host's speed
// stays a step (a running median keeps edges), and one slow probe moves
// no level.
constexpr std::size_t kLevelWindow = 9;
// How many of a level's standard errors the levels must span for the
// correction: the levels of a few hundred samples are some thirty
// independent medians, whose range on noise alone is rarely beyond five
// of their standard errors.
constexpr double kDriftNoiseSpan = 6.0;

using GroupKey = std::tuple<Method, std::uint32_t, std::uint64_t>;

struct Layout {
  std::vector<std::size_t> order;       // indices of the samples used, by seq
  std::vector<std::size_t> group;       // group of each
  std::vector<bool> linked;             // its group spans blocks joined to the run's
  std::size_t groups = 0;
  std::size_t blocks = 0;               // of kDriftBlock positions
};

Layout LayOut(const std::vector<Sample>& samples) {
  Layout l;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    if (s.ok() && s.bytes > 0 && s.cpu_ns > 0 && s.wall_ns > 0) l.order.push_back(i);
  }
  std::stable_sort(l.order.begin(), l.order.end(), [&](std::size_t a, std::size_t b) {
    return *samples[a].seq < *samples[b].seq;
  });
  std::map<GroupKey, std::size_t> ids;
  std::vector<std::set<std::size_t>> spans;
  for (std::size_t p = 0; p < l.order.size(); ++p) {
    const Sample& s = samples[l.order[p]];
    const auto [it, added] = ids.emplace(GroupKey{s.method, s.depth, s.size_bytes}, ids.size());
    if (added) spans.emplace_back();
    l.group.push_back(it->second);
    spans[it->second].insert(p / kDriftBlock);
  }
  l.groups = ids.size();
  // Blocks that a group was probed in are measured against each other; the
  // levels are measured against the run where the blocks are joined to
  // the one that holds the most samples. A depth class's refinement may
  // probe its own sizes in two blocks of its own: that joins those two
  // blocks, not them to the run, and their level is no more known than
  // that of a class probed once.
  l.blocks = l.order.empty() ? 0 : (l.order.size() - 1) / kDriftBlock + 1;
  std::vector<std::size_t> root(l.blocks);
  for (std::size_t b = 0; b < l.blocks; ++b) root[b] = b;
  const auto find = [&](std::size_t b) {
    while (root[b] != b) b = root[b] = root[root[b]];
    return b;
  };
  for (const std::set<std::size_t>& span : spans) {
    for (std::size_t b : span) root[find(b)] = find(*span.begin());
  }
  std::vector<std::size_t> held(l.blocks, 0);
  for (std::size_t p = 0; p < l.order.size(); ++p) {
    if (spans[l.group[p]].size() > 1) ++held[find(p / kDriftBlock)];
  }
  const auto run = static_cast<std::size_t>(std::max_element(held.begin(), held.end()) - held.begin());
  for (std::size_t p = 0; p < l.order.size(); ++p) {
    l.linked.push_back(spans[l.group[p]].size() > 1 && find(p / kDriftBlock) == run);
  }
  return l;
}

// The linked positions nearest `p`: for a linked one, the kLevelWindow
// around it; for one whose group was probed at one time only (a depth
// class's own probes), those before it, else after it: the speed the host
// had when last measured.
std::pair<std::size_t, std::size_t> Window(const std::vector<std::size_t>& linked, std::size_t p,
                                           bool own) {
  const std::size_t n = linked.size();
  const std::size_t w = std::min(kLevelWindow, n);
  const auto at = static_cast<std::size_t>(std::lower_bound(linked.begin(), linked.end(), p) -
                                           linked.begin());
  std::size_t first = 0;
  if (own) {
    first = at >= w ? at - w : 0;
  } else {
    first = at > w / 2 ? at - w / 2 : 0;
  }
  first = std::min(first, n - w);
  return {first, first + w};
}

// Each group's effect (log), for the log costs `y` by position: a median
// polish of group effects and block levels, the levels measured by the
// linked samples only (a group probed in one block says nothing of it).
std::vector<double> GroupEffects(const Layout& l, const std::vector<double>& y) {
  std::vector<double> level(l.blocks, 0.0);
  std::vector<double> effect(l.groups, 0.0);
  std::vector<std::vector<double>> cells;
  for (int round = 0; round < kPolishRounds; ++round) {
    cells.assign(l.groups, {});
    for (std::size_t p = 0; p < y.size(); ++p) {
      cells[l.group[p]].push_back(y[p] - level[p / kDriftBlock]);
    }
    for (std::size_t g = 0; g < l.groups; ++g) effect[g] = Median(cells[g]);
    cells.assign(l.blocks, {});
    for (std::size_t p = 0; p < y.size(); ++p) {
      if (l.linked[p]) cells[p / kDriftBlock].push_back(y[p] - effect[l.group[p]]);
    }
    for (std::size_t b = 0; b < l.blocks; ++b) {
      if (!cells[b].empty()) level[b] = Median(cells[b]);
    }
  }
  return effect;
}

// Each position's level (log) for the log costs `y`: the running median of
// the linked samples' residuals from their groups' effects, which keeps a
// step a step where a block would blur it; centred on the linked samples'
// median level. All 0 where no sample is linked.
struct LevelSeries {
  std::vector<double> level;  // by position
  double noise = 0;           // standard error of one level (log)
};

LevelSeries Levels(const Layout& l, const std::vector<double>& y) {
  LevelSeries out;
  std::vector<double>& level = out.level;
  level.assign(y.size(), 0.0);
  std::vector<std::size_t> linked;
  for (std::size_t p = 0; p < y.size(); ++p) {
    if (l.linked[p]) linked.push_back(p);
  }
  if (linked.empty()) return out;
  const std::vector<double> effect = GroupEffects(l, y);
  std::vector<double> residual;
  for (std::size_t p : linked) residual.push_back(y[p] - effect[l.group[p]]);
  std::vector<double> window;
  for (std::size_t p = 0; p < y.size(); ++p) {
    const auto [first, last] = Window(linked, p, !l.linked[p]);
    window.assign(residual.begin() + static_cast<std::ptrdiff_t>(first),
                  residual.begin() + static_cast<std::ptrdiff_t>(last));
    level[p] = Median(window);
  }
  std::vector<double> at_linked;
  for (std::size_t p : linked) at_linked.push_back(level[p]);
  const double centre = Median(at_linked);
  for (double& v : level) v -= centre;
  // What is left of each linked sample beside its group and its level: the
  // probes' own scatter, of which a level is the median of a window.
  std::vector<double> left;
  for (std::size_t k = 0; k < linked.size(); ++k) {
    left.push_back(residual[k] - (level[linked[k]] + centre));
  }
  const double span = static_cast<double>(std::min(kLevelWindow, linked.size()));
  out.noise = kMedianEfficiency * ScaledMad(left) / std::sqrt(span);
  return out;
}

}  // namespace

std::optional<HostDrift> CorrectDrift(std::vector<Sample>& path_samples) {
  for (const Sample& s : path_samples) {
    if (s.ok() && !s.seq) return std::nullopt;
  }
  const Layout l = LayOut(path_samples);
  HostDrift drift;
  drift.samples = l.order.size();
  drift.linked = static_cast<std::size_t>(std::count(l.linked.begin(), l.linked.end(), true));
  if (drift.linked == 0) return drift;
  std::vector<double> cpu, wall;
  for (std::size_t p = 0; p < l.order.size(); ++p) {
    const Sample& s = path_samples[l.order[p]];
    const auto bytes = static_cast<double>(s.bytes);
    cpu.push_back(std::log(static_cast<double>(s.cpu_ns) / bytes));
    wall.push_back(std::log(static_cast<double>(s.wall_ns) / bytes));
  }
  const LevelSeries cpu_series = Levels(l, cpu);
  const LevelSeries wall_series = Levels(l, wall);
  const std::vector<double>& cpu_level = cpu_series.level;
  const std::vector<double>& wall_level = wall_series.level;
  const auto [cpu_low, cpu_high] = std::minmax_element(cpu_level.begin(), cpu_level.end());
  const auto [wall_low, wall_high] = std::minmax_element(wall_level.begin(), wall_level.end());
  drift.cpu_low = std::exp(*cpu_low);
  drift.cpu_high = std::exp(*cpu_high);
  drift.wall_low = std::exp(*wall_low);
  drift.wall_high = std::exp(*wall_high);
  drift.noise = std::max(cpu_series.noise, wall_series.noise);
  // Beyond the ratio, and beyond what the levels' own noise spreads them
  // by: on a host whose probes scatter by a fifth, the running medians of
  // nine alone span more than the ratio, and a correction would only add
  // their noise.
  const auto moved = [](double low, double high, double noise) {
    return high / low > kDriftApplyRatio && std::log(high / low) > kDriftNoiseSpan * noise;
  };
  drift.applied = moved(drift.cpu_low, drift.cpu_high, cpu_series.noise) ||
                  moved(drift.wall_low, drift.wall_high, wall_series.noise);
  if (!drift.applied) return drift;
  const auto scaled = [](std::uint64_t ns, double level) {
    return std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::llround(static_cast<double>(ns) / std::exp(level))));
  };
  for (std::size_t p = 0; p < l.order.size(); ++p) {
    Sample& s = path_samples[l.order[p]];
    s.cpu_ns = scaled(s.cpu_ns, cpu_level[p]);
    s.wall_ns = scaled(s.wall_ns, wall_level[p]);
  }
  return drift;
}

}  // namespace zcal::calibrator::detail
