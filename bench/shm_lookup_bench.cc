// Cost of the client's lookups while a writer publishes from another
// thread, beside one getsockopt(SO_ZEROCOPY) for scale: the cheapest
// system call a transport makes per connection anyway. Targets (median):
// cached decision <= 10 ns, full lookup among 256 entries <= 20 ns.
// Prints the medians and their ratios to getsockopt, measured in one run;
// and the guard with depth classes (libzcal 1.2) beside libzcal 1.1's
// guard (guard_1_1/), and the lookup by depth beside the plain one; and
// the guard with the process's report (libzcal 1.3) off and on, side by
// side, as a ratio and a difference (target: within +2 ns).
//
//   shm_lookup_bench [--benchmark_* options]
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "guard_1_1/old_guard.h"
#include "zcal/agent/publish/shm_writer.h"
#include "zcal/zcal.h"

namespace {

using zcal::agent::PublishedEntry;
using zcal::agent::ScopeKind;
namespace cal = zcal::calibrator;

constexpr std::uint32_t kEntries = 256;
// The agent publishes once per calibration (minutes) and heartbeats about
// once a second; the writer here publishes every millisecond and
// heartbeats every 100 us, so that lookups pay for fresh copies too.
constexpr auto kPublishEvery = std::chrono::milliseconds(1);
constexpr auto kHeartbeatEvery = std::chrono::microseconds(100);

zcal_handle* g_handle = nullptr;
std::vector<zcal_key> g_keys;

std::vector<PublishedEntry> Table(std::uint64_t round) {
  std::vector<PublishedEntry> table;
  auto add = [&](ScopeKind scope, cal::Method method, std::uint64_t threshold) -> PublishedEntry& {
    PublishedEntry e;
    e.scope = scope;
    e.method = method;
    e.verdict = cal::Verdict::kThreshold;
    e.threshold_bytes = threshold + round % 7;
    e.confidence = 0.9;
    table.push_back(e);
    return table.back();
  };
  const cal::Method methods[] = {cal::Method::kMsgZerocopy, cal::Method::kUringSendZc};
  for (cal::Method m : methods) {
    add(ScopeKind::kHostDefault, m, 16384);
    add(ScopeKind::kLoopback, m, 1u << 30);
    add(ScopeKind::kInterface, m, 12288).interface = "eth0";
  }
  // Depth classes of the host default, as the discard path measured them.
  for (const auto& [depth, threshold] : {std::pair{zcal::agent::DepthClass::k1, 65536u},
                                         std::pair{zcal::agent::DepthClass::k4, 49152u},
                                         std::pair{zcal::agent::DepthClass::k16, 32768u}}) {
    for (cal::Method m : methods) add(ScopeKind::kHostDefault, m, threshold).depth = depth;
  }
  // Peers: /16, /24 and /32 networks (IPv4) and /48, /64 (IPv6).
  for (std::uint32_t i = 0; table.size() < kEntries; ++i) {
    const cal::Method m = methods[i % 2];
    PublishedEntry& e = add(ScopeKind::kPeer, m, 4096 + i);
    switch (i % 5) {
      case 0: e.address = "10." + std::to_string(i / 5 % 250) + ".0.0"; e.prefix_len = 16; break;
      case 1: e.address = "10.200." + std::to_string(i / 5 % 250) + ".0"; e.prefix_len = 24; break;
      case 2: e.address = "10.201.0." + std::to_string(i / 5 % 250); e.prefix_len = 32; break;
      case 3: e.address = "2001:db8:" + std::to_string(i / 5 % 250) + "::"; e.prefix_len = 48; break;
      default: e.address = "2001:db9:0:" + std::to_string(i / 5 % 250) + "::"; e.prefix_len = 64; break;
    }
  }
  return table;
}

// Cached per-connection result, revalidated by the generation only.
void BM_CachedDecision(benchmark::State& state) {
  zcal_result cached{};
  zcal_lookup(g_handle, &g_keys[0], ZCAL_METHOD_MSG_ZEROCOPY, &cached);
  std::uint64_t size = 1000, lookups = 0;
  for (auto _ : state) {
    if (zcal_generation(g_handle) != cached.generation) {
      zcal_lookup(g_handle, &g_keys[0], ZCAL_METHOD_MSG_ZEROCOPY, &cached);
      ++lookups;
    }
    benchmark::DoNotOptimize(zcal_result_should_zerocopy(&cached, size, 0));
    size += 4096;
  }
  state.counters["relookups"] = static_cast<double>(lookups);
}

// The per-connection guard's per-send answer (zcal_guard_should_zerocopy),
// against the cached decision above: one call more, and the guard's state.
// Every fourth send reports four completions, so that the depth moves
// between classes 1 and 4 (and 1.1's guard gets the same calls). The key
// is the host default's (g_keys.back()), which has every class.
template <auto Init, auto Should, auto Completed>
void GuardSends(benchmark::State& state) {
  zcal_guard guard;
  Init(&guard, sizeof guard, g_handle, &g_keys.back(), ZCAL_METHOD_MSG_ZEROCOPY, 0, 0);
  std::uint64_t size = 1000, sends = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(Should(&guard, size));
    if ((++sends & 3) == 0) Completed(&guard, 4, 0);
    size += 4096;
  }
}
void BM_GuardDecision(benchmark::State& state) {
  GuardSends<zcal_guard_init_key, zcal_guard_should_zerocopy, zcal_guard_completed>(state);
}
// The same sends with this process's report open (zcal_report_open):
// every answer and completion counted in the thread's slot.
void BM_GuardDecisionReported(benchmark::State& state) {
  if (const int rc = zcal_report_open("shm_lookup_bench"); rc != 0) {
    state.SkipWithError(zcal_error_detail());
    return;
  }
  GuardSends<zcal_guard_init_key, zcal_guard_should_zerocopy, zcal_guard_completed>(state);
  zcal_report_close();
}
void BM_GuardDecision11(benchmark::State& state) {
  GuardSends<old_zcal_guard_init_key, old_zcal_guard_should_zerocopy, old_zcal_guard_completed>(
      state);
}

// Full lookup: longest-prefix match among 256 entries, cycling over keys
// that hit /32, /24, /16, IPv6 /48 and /64 peers, and over keys that miss
// them (probing a populated /32 or /48 first) to the host default.
void BM_FullLookup(benchmark::State& state) {
  std::size_t i = 0;
  zcal_result r;
  for (auto _ : state) {
    benchmark::DoNotOptimize(zcal_lookup(g_handle, &g_keys[i], ZCAL_METHOD_MSG_ZEROCOPY, &r));
    if (++i == g_keys.size()) i = 0;
  }
}

// The same keys at depths of every class (the host-default keys have
// every class; the peers answer with their stream entry).
void BM_FullLookupDepth(benchmark::State& state) {
  static constexpr std::uint32_t kDepths[] = {1, 4, 16, 40, 2, 8, 20, 100, 3};
  std::size_t i = 0, d = 0;
  zcal_result r;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        zcal_lookup_depth(g_handle, &g_keys[i], ZCAL_METHOD_MSG_ZEROCOPY, kDepths[d], &r));
    if (++i == g_keys.size()) i = 0;
    if (++d == std::size(kDepths)) d = 0;
  }
}

void BM_ShouldZerocopy(benchmark::State& state) {
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(zcal_should_zerocopy(g_handle, &g_keys[i], ZCAL_METHOD_MSG_ZEROCOPY,
                                                  65536, 5000000000u, 0));
    if (++i == g_keys.size()) i = 0;
  }
}

void BM_Getsockopt(benchmark::State& state) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  int value = 0;
  for (auto _ : state) {
    socklen_t len = sizeof value;
    benchmark::DoNotOptimize(getsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &value, &len));
  }
  close(fd);
}

BENCHMARK(BM_CachedDecision);
BENCHMARK(BM_GuardDecision11);
BENCHMARK(BM_GuardDecision);
BENCHMARK(BM_GuardDecisionReported);
BENCHMARK(BM_FullLookup);
BENCHMARK(BM_FullLookupDepth);
BENCHMARK(BM_ShouldZerocopy);
BENCHMARK(BM_Getsockopt);

// Keeps the median of every benchmark, in ns.
class MedianReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.aggregate_name == "median")
        medians_[run.run_name.function_name] = run.GetAdjustedRealTime();
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double median(const std::string& name) const {
    auto it = medians_.find(name);
    return it == medians_.end() ? 0 : it->second;
  }

 private:
  std::map<std::string, double> medians_;
};

// The report's cost measured in pairs: rounds of kPairSends sends with
// reporting off, then on (or on, then off: the order alternates), each
// round's difference kept, the median of those taken. Google Benchmark's
// repetitions (above) are half a second each, and this VM's speed drifts
// by half over seconds (the same code measured 6 and 10 ns per send a
// minute apart): a difference of medians taken seconds apart carries that
// drift, a difference within one millisecond-long round does not.
//
// Each half starts with kWarmSends untimed sends. A round opens a new
// object, which a process does once: its first sends take the thread's
// slot and fault in the object's fresh pages (a few microseconds, about
// 0.2 ns spread over a round), costs of the open and not of a send. The
// half without reporting gets the same untimed sends, so that both halves
// start from the same caches.
constexpr int kPairRounds = 301;
constexpr int kPairSends = 20000;
constexpr int kWarmSends = 1000;

struct PairedCost {
  double off = 0, on = 0, diff = 0, diff_q1 = 0, diff_q3 = 0;
};

void Sends(zcal_guard& guard, std::uint64_t& size, std::uint64_t& sends, int n) {
  for (int i = 0; i < n; ++i) {
    benchmark::DoNotOptimize(zcal_guard_should_zerocopy(&guard, size));
    if ((++sends & 3) == 0) zcal_guard_completed(&guard, 4, 0);
    size += 4096;
  }
}

double SendsNs(zcal_guard& guard, std::uint64_t& size, std::uint64_t& sends) {
  Sends(guard, size, sends, kWarmSends);
  const auto start = std::chrono::steady_clock::now();
  Sends(guard, size, sends, kPairSends);
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  return took.count() / kPairSends;
}

std::optional<PairedCost> PairedReportCost() {
  zcal_guard guard;
  zcal_guard_init_key(&guard, sizeof guard, g_handle, &g_keys.back(), ZCAL_METHOD_MSG_ZEROCOPY, 0,
                      0);
  std::uint64_t size = 1000, sends = 0;
  std::vector<double> off, on, diff;
  for (int round = 0; round < kPairRounds; ++round) {
    // Every round opens a new object (a close keeps its mapping, by
    // design: the bench's address space grows by 1.4 MB a round, of which
    // the few pages written are allocated).
    if (zcal_report_open("shm_lookup_bench") != 0) {
      std::fprintf(stderr, "shm_lookup_bench: %s\n", zcal_error_detail());
      return std::nullopt;
    }
    double with = 0, without = 0;
    if (round % 2 == 0) {
      with = SendsNs(guard, size, sends);
      zcal_report_close();
      without = SendsNs(guard, size, sends);
    } else {
      zcal_report_close();
      without = SendsNs(guard, size, sends);
      zcal_report_open("shm_lookup_bench");
      with = SendsNs(guard, size, sends);
      zcal_report_close();
    }
    on.push_back(with);
    off.push_back(without);
    diff.push_back(with - without);
  }
  const auto at = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
  };
  return PairedCost{at(off, 0.5), at(on, 0.5), at(diff, 0.5), at(diff, 0.25), at(diff, 0.75)};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  std::string reps = "--benchmark_repetitions=9";
  std::string aggregates = "--benchmark_report_aggregates_only=true";
  // Repetitions of different benchmarks interleaved: the ratios compare
  // medians taken under the same load, on a machine shared with others.
  std::string interleave = "--benchmark_enable_random_interleaving=true";
  bool has_reps = false, has_interleave = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind("--benchmark_repetitions", 0) == 0) has_reps = true;
    if (std::string(argv[i]).rfind("--benchmark_enable_random_interleaving", 0) == 0)
      has_interleave = true;
  }
  if (!has_reps) {
    args.push_back(reps.data());
    args.push_back(aggregates.data());
  }
  if (!has_interleave) args.push_back(interleave.data());
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());

  const std::string name = "/zcal-bench-" + std::to_string(getpid());
  zcal::agent::ShmWriterOptions options;
  options.name = name;
  options.capacity = kEntries;
  auto writer = zcal::agent::ShmWriter::Create(options);
  if (!writer) {
    std::fprintf(stderr, "shm_lookup_bench: %s\n", writer.error().message.c_str());
    return 1;
  }
  if (auto ok = (*writer)->Publish(Table(0), false); !ok) {
    std::fprintf(stderr, "shm_lookup_bench: %s\n", ok.error().message.c_str());
    return 1;
  }
  if (zcal_open(name.c_str(), &g_handle) != 0) {
    std::fprintf(stderr, "shm_lookup_bench: %s\n", zcal_error_detail());
    return 1;
  }
  // Table(): msg_zerocopy peers are the even i, networks numbered i / 5.
  struct Probe {
    const char* address;
    std::uint8_t scope;
  };
  for (const Probe probe : {Probe{"10.201.0.4", ZCAL_SCOPE_PEER},       // /32, i = 22
                            Probe{"10.200.3.1", ZCAL_SCOPE_PEER},       // /24, i = 16
                            Probe{"10.4.4.5", ZCAL_SCOPE_PEER},         // /16, i = 20
                            Probe{"2001:db8:3::1", ZCAL_SCOPE_PEER},    // /48, i = 18
                            Probe{"2001:db9:0:2::1", ZCAL_SCOPE_PEER},  // /64, i = 14
                            Probe{"10.201.0.7", ZCAL_SCOPE_HOST_DEFAULT},
                            Probe{"2001:db8:4::1", ZCAL_SCOPE_HOST_DEFAULT},
                            Probe{"192.0.2.1", ZCAL_SCOPE_HOST_DEFAULT}}) {
    zcal_key key;
    zcal_key_from_string(probe.address, nullptr, &key);
    zcal_result r;
    if (zcal_lookup(g_handle, &key, ZCAL_METHOD_MSG_ZEROCOPY, &r) != 0 || r.scope != probe.scope) {
      std::fprintf(stderr, "shm_lookup_bench: %s is not answered by a %s entry: fix the keys\n",
                   probe.address, zcal_scope_name(probe.scope));
      return 1;
    }
    g_keys.push_back(key);
  }

  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> publishes{0};
  std::thread publisher([&] {
    auto next_publish = std::chrono::steady_clock::now();
    for (std::uint64_t round = 1; !stop.load(); ++round) {
      std::this_thread::sleep_for(kHeartbeatEvery);
      (*writer)->Heartbeat();
      if (std::chrono::steady_clock::now() >= next_publish) {
        (void)(*writer)->Publish(Table(round), false);
        publishes.fetch_add(1);
        next_publish += kPublishEvery;
      }
    }
  });

  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const std::optional<PairedCost> paired = PairedReportCost();
  stop = true;
  publisher.join();
  zcal_close(g_handle);
  shm_unlink(name.c_str());

  const double cached = reporter.median("BM_CachedDecision");
  const double guard = reporter.median("BM_GuardDecision");
  const double guard11 = reporter.median("BM_GuardDecision11");
  const double reported = reporter.median("BM_GuardDecisionReported");
  const double full = reporter.median("BM_FullLookup");
  const double full_depth = reporter.median("BM_FullLookupDepth");
  const double should = reporter.median("BM_ShouldZerocopy");
  const double syscall = reporter.median("BM_Getsockopt");
  std::printf("\nmedians (writer published %llu times meanwhile, 256 entries):\n",
              static_cast<unsigned long long>(publishes.load()));
  std::printf("  cached decision          %7.2f ns  (target <= 10 ns)\n", cached);
  std::printf("  guard decision (1.1)     %7.2f ns\n", guard11);
  std::printf("  guard decision           %7.2f ns  (depth classes)\n", guard);
  std::printf("  guard decision, report   %7.2f ns  (reporting on)\n", reported);
  std::printf("  full lookup              %7.2f ns  (target <= 20 ns)\n", full);
  std::printf("  full lookup by depth     %7.2f ns\n", full_depth);
  std::printf("  should_zerocopy          %7.2f ns\n", should);
  std::printf("  getsockopt(SO_ZEROCOPY)  %7.2f ns\n", syscall);
  if (syscall > 0) {
    std::printf("ratios to one getsockopt(SO_ZEROCOPY) (lower is cheaper):\n");
    for (const auto& [what, ns] : {std::pair{"cached decision", cached}, std::pair{"guard decision", guard},
                                   std::pair{"full lookup", full}, std::pair{"should_zerocopy", should}}) {
      if (ns > 0) std::printf("  %-16s %.4f  (1/%.0f)\n", what, ns / syscall, syscall / ns);
    }
  }
  if (guard > 0 && should > 0 && cached > 0) {
    std::printf("guard decision / should_zerocopy = %.3f, / cached decision = %.2f\n",
                guard / should, guard / cached);
  }
  if (guard > 0 && guard11 > 0)
    std::printf("guard decision with depth classes / 1.1's guard = %.3f\n", guard / guard11);
  if (guard > 0 && reported > 0)
    std::printf("guard decision with reporting on / off = %.3f (%+.2f ns, medians of the repetitions)\n",
                reported / guard, reported - guard);
  if (paired) {
    std::printf("guard decision with reporting on / off, in %d pairs of %d sends: off %.2f ns, on %.2f ns,\n"
                "  paired difference %+.2f ns [quartiles %+.2f, %+.2f], ratio %.3f (target: within +2 ns)\n",
                kPairRounds, kPairSends, paired->off, paired->on, paired->diff, paired->diff_q1,
                paired->diff_q3, paired->off > 0 ? paired->on / paired->off : 0.0);
  }
  if (full > 0 && full_depth > 0)
    std::printf("full lookup by depth / full lookup = %.3f\n", full_depth / full);
  return 0;
}
