// What the applications on this host sent, as their libzcal reports say
// (report ABI 1, docs/shm-abi.md "Report objects"): the counters of one
// read, summed by application name, and a bounded history of such reads to
// ask what was sent within a window. The reader that fills them is
// agent/apps; the metrics, the page, the field-contradiction rule and the
// traffic mix of a decision read them.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>

#include "zcal/agent/domain/depth_class.h"
#include "zcal/calibrator/method.h"

namespace zcal::agent {

/// Which scope answered a reported send: the report's scope index, which
/// is the segment's scope code, plus kNone for a send no entry answered
/// (the caller's fallback).
enum class AppScope : std::uint8_t {
  kHostDefault = 0,
  kLoopback = 1,
  kPeer = 2,
  kInterface = 3,
  kNone = 4,
};
inline constexpr std::size_t kAppScopes = 5;
/// "host_default", "loopback", "peer", "interface", "none" (metric label).
std::string_view AppScopeName(AppScope scope);

/// Why a send got its answer (the report's reason index; 3 is reserved).
enum class AppReason : std::uint8_t {
  kThreshold = 0,  ///< the entry's verdict
  kGuardOff = 1,   ///< the guard held zerocopy back after copied completions
  kNoAnswer = 2,   ///< no usable entry: the caller's fallback
};
inline constexpr std::size_t kAppReasons = 3;
/// "threshold", "guard_off", "no_answer" (metric label).
std::string_view AppReasonName(AppReason reason);

/// Size buckets of the report: bucket b counts sends of 2^b..2^(b+1)-1
/// bytes (b = 0 also holds 0), the last everything from 2^31.
inline constexpr std::size_t kAppSizeBuckets = 32;
/// Depth classes of the report, in zcal_depth_class's order.
inline constexpr std::size_t kAppDepthClasses = 4;
/// The class of report depth index `index` (0 -> 1, 1 -> 4, 2 -> 16,
/// 3 -> stream); `index` < kAppDepthClasses.
DepthClass AppDepthClass(std::size_t index);

/// The counters of one (scope, method) of an application, summed over its
/// threads' slots (and, for a name, over its processes).
struct AppCounters {
  /// Sends by [depth index][answer: 0 copy, 1 zerocopy][reason].
  std::array<std::array<std::array<std::uint64_t, kAppReasons>, 2>,
             kAppDepthClasses>
      answers{};
  std::array<std::uint64_t, 2> bytes{};  ///< bytes of the sends, by answer
  std::uint64_t completions = 0;         ///< zerocopy completions reported
  std::uint64_t copied = 0;              ///< of them, the kernel copied
  std::array<std::uint64_t, kAppSizeBuckets> sizes{};  ///< sends by size bucket

  /// Every send counted (the sum of `answers`).
  std::uint64_t Sends() const;
  /// The sends answered `zerocopy` (true) or copy (false).
  std::uint64_t Sends(bool zerocopy) const;
  /// Adds word by word (modulo 2^64, as the writers count).
  AppCounters& operator+=(const AppCounters& other);
  /// What was counted since `earlier`, word by word; a word that went
  /// backwards gives 0, never a negative count.
  AppCounters Since(const AppCounters& earlier) const;
  bool Empty() const { return *this == AppCounters{}; }
  bool operator==(const AppCounters&) const = default;
};

struct AppCellKey {
  AppScope scope = AppScope::kNone;
  calibrator::Method method = calibrator::Method::kCopy;
  friend auto operator<=>(const AppCellKey&, const AppCellKey&) = default;
};

/// An application's counters by (scope, method); cells never written are
/// absent.
using AppCells = std::map<AppCellKey, AppCounters>;

/// One application name's totals: its live processes' counters plus those
/// of its processes that exited, folded in when the reader last saw them,
/// so that they never go backwards.
struct AppTotals {
  AppCells cells;
  std::uint32_t live_processes = 0;    ///< report objects open at this read
  std::uint64_t exited_processes = 0;  ///< folded in since the agent started
  bool operator==(const AppTotals&) const = default;
};

/// What the agent knows of the applications' sends at one read.
struct AppsSnapshot {
  std::uint64_t read_at_ns = 0;  ///< CLOCK_REALTIME of the read
  /// By name: the report's name, sanitised for a label (at most 63 bytes of
  /// [A-Za-z0-9_.:-]); names beyond the configured limit are summed under
  /// "other".
  std::map<std::string, AppTotals> apps;
  bool operator==(const AppsSnapshot&) const = default;
};

/// The name the reader sums names beyond its limit under.
inline constexpr std::string_view kOtherApps = "other";

/// What was sent within a window, by name and cell.
struct AppsWindow {
  std::uint64_t from_ns = 0;  ///< the older read (CLOCK_REALTIME)
  std::uint64_t to_ns = 0;    ///< the newer read
  std::map<std::string, AppCells> apps;  ///< names with something counted
};

/// Reads kept to ask what was sent within the last `window`. Memory is
/// bounded: at most kCheckpoints reads are kept, at least window /
/// kCheckpoints apart, plus the newest.
class AppHistory {
 public:
  static constexpr std::size_t kCheckpoints = 32;

  explicit AppHistory(std::chrono::seconds window) : window_(window) {}

  /// Adds a read; reads must come in time order (an earlier one, after a
  /// wall-clock step back, restarts the history).
  void Add(AppsSnapshot snapshot);

  /// What was sent between the newest read at or before the window's
  /// start (so the span may exceed the window by up to window /
  /// kCheckpoints; while the history is younger than the window, its
  /// oldest read) and the newest read: empty before two reads. A name or
  /// cell that appears only in the newer read counts from zero.
  AppsWindow Recent() const;

  std::chrono::seconds window() const { return window_; }
  std::size_t size() const { return reads_.size(); }

 private:
  std::chrono::seconds window_;
  std::deque<AppsSnapshot> reads_;
};

}  // namespace zcal::agent
