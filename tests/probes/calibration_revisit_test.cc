// The calibration's revisit (calibration.cc, Revisit): the methods a depth
// class stopped at the resolution, that the later classes' probes of a
// shared baseline moved off it, get the time the classes left. Run on a
// simulated discard path (RunCalibrationOn): every probe returns at once
// with a cost drawn from fixed curves and a seeded noise, so the budget
// never ends a class and each seed gives the same calibration.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>

#include "zcal/calibrator/depth.h"
#include "zcal/calibrator/planner.h"
#include "zcal/probes/calibration/calibration.h"
#include "zcal/probes/calibration/path_runner.h"

// This file's names, apart from other test files' (unity builds).
namespace calibration_revisit_test {
namespace {

using zcal::calibrator::IsZerocopy;
using zcal::calibrator::kStreamDepth;
using zcal::calibrator::Method;
using zcal::calibrator::Sample;
using zcal::calibrator::SampleStatus;
using zcal::calibrator::StopReason;
namespace probes = zcal::probes;

// CPU per send, ns: a cost per send and one per byte, as measured on the
// discard path of a 2-vCPU VM (copy 1.4 us a send at 1 KiB, 2 us at 8
// KiB; msg_zerocopy about 2 us at every size up to 16 KiB). Waiting for
// completions adds a cost per send at the numeric classes.
struct Curve {
  double per_send_ns;
  double per_byte_ns;
};

Curve CurveOf(Method method) {
  switch (method) {
    case Method::kCopy: return {1300, 0.10};
    case Method::kMsgZerocopy: return {1900, 0.03};
    case Method::kUringSend: return {1350, 0.10};
    case Method::kUringSendZc: return {1700, 0.035};
    case Method::kUringSendZcFixed: return {1500, 0.03};
  }
  return {};
}

double DepthCostNs(std::uint32_t depth) {
  switch (depth) {
    case 1: return 1800;
    case 4: return 700;
    case 16: return 250;
    default: return 0;
  }
}

class SimulatedDiscard final : public probes::PathRunner {
 public:
  SimulatedDiscard(std::uint64_t seed, double noise) : rng_(seed), noise_(noise) {}

  zcal::probes::Support SupportOf(Method /*method*/, const std::string& /*root*/) const override {
    return {};
  }
  probes::PathSeconds ProbeDuration(probes::PathSeconds /*remaining*/,
                                    std::size_t /*left*/) const override {
    return probes::kDiscardProbe;
  }
  zcal::Result<void> Prepare(probes::ProbeOptions& /*probe*/, std::size_t /*left*/) override {
    return {};
  }
  probes::PathProbe Probe(const probes::ProbeOptions& probe) override {
    const Curve curve = CurveOf(probe.method);
    const std::uint32_t depth = IsZerocopy(probe.method) ? probe.depth : kStreamDepth;
    const double size = static_cast<double>(probe.size_bytes);
    const double ns = (curve.per_send_ns + curve.per_byte_ns * size + DepthCostNs(depth)) *
                      std::exp(noise_ * normal_(rng_));
    constexpr double kWallNs = 10e6;
    const auto sends = static_cast<std::uint64_t>(kWallNs / ns);
    Sample s;
    s.path = probe.path;
    s.method = probe.method;
    s.size_bytes = probe.size_bytes;
    s.depth = depth;
    s.repeat = probe.repeat;
    s.bytes = sends * probe.size_bytes;
    s.wall_ns = static_cast<std::uint64_t>(kWallNs);
    s.cpu_ns = static_cast<std::uint64_t>(static_cast<double>(sends) * ns);
    s.host_cpu_ns = s.cpu_ns;
    s.zc_completions = IsZerocopy(probe.method) ? sends : 0;
    s.status = SampleStatus::kOk;
    return {{s, std::nullopt}, std::nullopt};
  }
  std::optional<probes::SessionLoss> Close(const std::vector<Sample>& /*samples*/,
                                           bool /*stopped*/) override {
    return std::nullopt;
  }

 private:
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};
  double noise_;
};

probes::CalibrationOptions DiscardOptions() {
  probes::CalibrationOptions options;
  options.target = probes::Target::Discard();
  options.read_host = false;
  options.depths = {1, 4, 16, kStreamDepth};
  options.budget_seconds = 20;
  return options;
}

// Whether any zerocopy sample of a class came after the first of a class
// calibrated later: the revisit probed it.
bool Revisited(const probes::CalibrationReport& report) {
  std::map<std::uint32_t, std::uint64_t> first, last;
  for (const Sample& s : report.samples) {
    if (!IsZerocopy(s.method) || !s.seq) continue;
    first.try_emplace(s.depth, *s.seq);
    last[s.depth] = *s.seq;
  }
  for (const auto& [depth, end] : last) {
    for (const auto& [other, begin] : first) {
      if (begin > first.at(depth) && end > begin) return true;
    }
  }
  return false;
}

TEST(CalibrationRevisit, NoMethodEndsAtAResolutionItsPublishedResultMissesWhileTimeIsLeft) {
  const zcal::calibrator::PlannerOptions stated;
  int revisited = 0;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    SimulatedDiscard path(seed, 0.04);
    auto report = probes::RunCalibrationOn(DiscardOptions(), path);
    ASSERT_TRUE(report) << report.error().message;
    revisited += Revisited(*report) ? 1 : 0;
    for (const probes::ClassAnalysis& c : report->classes) {
      for (const auto& [name, path_result] : c.analysis.paths) {
        for (const auto& [method, r] : path_result.methods) {
          if (!r.stop) continue;
          EXPECT_FALSE(zcal::calibrator::LostItsResolution(*r.stop, r, stated))
              << "seed " << seed << ", " << zcal::calibrator::MethodName(method) << " at depth "
              << c.depth << ": " << r.stop->detail;
        }
      }
    }
  }
  // The scenario must exercise the revisit: without it, later classes'
  // baseline probes leave some methods short of the resolution their
  // class stopped them at.
  EXPECT_GT(revisited, 0);
}

}  // namespace
}  // namespace calibration_revisit_test
