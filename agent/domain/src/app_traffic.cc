#include "zcal/agent/domain/app_traffic.h"

#include <utility>

namespace zcal::agent {

std::string_view AppScopeName(AppScope scope) {
  switch (scope) {
    case AppScope::kHostDefault: return "host_default";
    case AppScope::kLoopback: return "loopback";
    case AppScope::kPeer: return "peer";
    case AppScope::kInterface: return "interface";
    case AppScope::kNone: return "none";
  }
  return "unknown";
}

std::string_view AppReasonName(AppReason reason) {
  switch (reason) {
    case AppReason::kThreshold: return "threshold";
    case AppReason::kGuardOff: return "guard_off";
    case AppReason::kNoAnswer: return "no_answer";
  }
  return "unknown";
}

DepthClass AppDepthClass(std::size_t index) {
  static constexpr DepthClass kOrder[kAppDepthClasses] = {
      DepthClass::k1, DepthClass::k4, DepthClass::k16, DepthClass::kStream};
  return index < kAppDepthClasses ? kOrder[index] : DepthClass::kStream;
}

namespace {

// Applies `op` to each pair of words of two counters, in the same order.
template <typename Op>
void EachWord(AppCounters& a, const AppCounters& b, Op op) {
  for (std::size_t d = 0; d < kAppDepthClasses; ++d) {
    for (std::size_t z = 0; z < 2; ++z) {
      for (std::size_t r = 0; r < kAppReasons; ++r) {
        op(a.answers[d][z][r], b.answers[d][z][r]);
      }
    }
  }
  for (std::size_t z = 0; z < 2; ++z) op(a.bytes[z], b.bytes[z]);
  op(a.completions, b.completions);
  op(a.copied, b.copied);
  for (std::size_t i = 0; i < kAppSizeBuckets; ++i) op(a.sizes[i], b.sizes[i]);
}

}  // namespace

std::uint64_t AppCounters::Sends(bool zerocopy) const {
  std::uint64_t n = 0;
  for (const auto& depth : answers) {
    for (const std::uint64_t v : depth[zerocopy ? 1 : 0]) n += v;
  }
  return n;
}

std::uint64_t AppCounters::Sends() const { return Sends(false) + Sends(true); }

AppCounters& AppCounters::operator+=(const AppCounters& other) {
  EachWord(*this, other, [](std::uint64_t& a, std::uint64_t b) { a += b; });
  return *this;
}

AppCounters AppCounters::Since(const AppCounters& earlier) const {
  AppCounters out = *this;
  EachWord(out, earlier,
           [](std::uint64_t& a, std::uint64_t b) { a = a >= b ? a - b : 0; });
  return out;
}

void AppHistory::Add(AppsSnapshot snapshot) {
  if (!reads_.empty() && snapshot.read_at_ns < reads_.back().read_at_ns) {
    reads_.clear();  // the wall clock stepped back: ages would lie
  }
  const auto window_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(window_).count());
  const std::uint64_t spacing = window_ns / kCheckpoints;
  // The newest read is always kept; it replaces the previous newest while
  // that one is closer than the spacing to the checkpoint before it.
  if (reads_.size() >= 2 &&
      reads_.back().read_at_ns - reads_[reads_.size() - 2].read_at_ns < spacing) {
    reads_.back() = std::move(snapshot);
  } else {
    reads_.push_back(std::move(snapshot));
  }
  // Drop reads older than the window, keeping the newest of those so that
  // the window's start has a read to count from.
  const std::uint64_t now = reads_.back().read_at_ns;
  const std::uint64_t start = now > window_ns ? now - window_ns : 0;
  while (reads_.size() > 2 && reads_[1].read_at_ns <= start) reads_.pop_front();
  while (reads_.size() > kCheckpoints + 1) reads_.pop_front();
}

AppsWindow AppHistory::Recent() const {
  AppsWindow out;
  if (reads_.size() < 2) return out;
  const std::uint64_t now = reads_.back().read_at_ns;
  const auto window_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(window_).count());
  const std::uint64_t start = now > window_ns ? now - window_ns : 0;
  // The oldest read at or after the window's start, or the newest before it
  // when none is (the window then reaches a little further back).
  std::size_t from = 0;
  while (from + 2 < reads_.size() && reads_[from + 1].read_at_ns <= start) ++from;
  const AppsSnapshot& older = reads_[from];
  const AppsSnapshot& newer = reads_.back();
  out.from_ns = older.read_at_ns;
  out.to_ns = newer.read_at_ns;
  for (const auto& [name, totals] : newer.apps) {
    const auto before = older.apps.find(name);
    AppCells cells;
    for (const auto& [key, counters] : totals.cells) {
      AppCounters sent = counters;
      if (before != older.apps.end()) {
        if (const auto it = before->second.cells.find(key);
            it != before->second.cells.end()) {
          sent = counters.Since(it->second);
        }
      }
      if (!sent.Empty()) cells.emplace(key, sent);
    }
    if (!cells.empty()) out.apps.emplace(name, std::move(cells));
  }
  return out;
}

}  // namespace zcal::agent
