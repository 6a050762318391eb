// The seqlock under load: a writer publishing as fast as it can, a reader
// checking that every result is internally consistent. Every field of an
// entry is derived from one publish counter k, so a torn read (fields of
// two publishes) breaks the invariant. Runs in suite 'agent' and, built
// with ThreadSanitizer, in suite 'tsan'.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "handle.h"
#include "shm_test_util.h"
#include "zcal/zcal.h"

// This file's names, apart from other test files' (unity builds).
namespace shm_concurrency_test {
namespace {

using zcal::agent::PublishedEntry;
using zcal::agent::ScopeKind;
using zcal::test::MakeWriter;
using zcal::test::PeerEntry;
using zcal::test::ScopedName;

#if defined(__SANITIZE_THREAD__)
#define ZCAL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ZCAL_TSAN 1
#endif
#endif

// 10^7 reads in all, half per test (about 6 s here, 3 s more under ASan on
// an idle machine). ThreadSanitizer instruments every load of the copy
// loop and runs a fifth of them, 2x10^6, to stay well within a minute.
#if defined(ZCAL_TSAN)
constexpr std::uint64_t kReadsPerTest = 1000000;
#else
constexpr std::uint64_t kReadsPerTest = 5000000;
#endif
constexpr std::uint32_t kEntries = 8;
// Reads continue past kReadsPerTest until this many publishes were seen.
constexpr std::uint64_t kMinGenerations = 5000;

std::uint64_t Fingerprint(std::uint64_t k, std::uint32_t j) {
  return (k * 0x9e3779b97f4a7c15u) ^ (std::uint64_t{j} << 56);
}

// Fills `table` (kEntries peers 10.0.j.0/24) for publish k.
void FillTable(std::vector<PublishedEntry>& table, std::uint64_t k) {
  if (table.empty()) {
    for (std::uint32_t j = 0; j < kEntries; ++j)
      table.push_back(PeerEntry("10.0." + std::to_string(j) + ".0", 24, 1));
  }
  for (std::uint32_t j = 0; j < kEntries; ++j) {
    PublishedEntry& e = table[j];
    e.threshold_bytes = k * kEntries + j + 1;
    e.measured_at_ns = k * 1000 + j;
    e.fingerprint = Fingerprint(k, j);
    e.confidence = static_cast<double>(k % 1001) / 1000.0;
  }
}

struct Tally {
  std::uint64_t reads = 0, torn = 0, backwards = 0, busy = 0, other_errors = 0;
  std::uint64_t generations_seen = 0, table_checks = 0;
};

// Checks one result for entry j; returns k, or UINT64_MAX when torn.
std::uint64_t CheckResult(const zcal_result& r, std::uint32_t j) {
  if (r.threshold_bytes < j + 1 || (r.threshold_bytes - j - 1) % kEntries != 0)
    return UINT64_MAX;
  const std::uint64_t k = (r.threshold_bytes - j - 1) / kEntries;
  const bool ok = r.measured_at_ns == k * 1000 + j && r.fingerprint == Fingerprint(k, j) &&
                  r.confidence_ppm == (k % 1001) * 1000 && r.prefix_len == 24 &&
                  r.verdict == ZCAL_VERDICT_THRESHOLD;
  return ok ? k : UINT64_MAX;
}

Tally Hammer(zcal_handle* h, zcal::agent::ShmWriter& writer) {
  std::atomic<bool> stop{false};
  std::thread publisher([&] {
    std::vector<PublishedEntry> table;
    for (std::uint64_t k = 1; !stop.load(std::memory_order_relaxed); ++k) {
      FillTable(table, k);
      if (!writer.Publish(table, false)) std::abort();
    }
  });

  Tally t;
  std::vector<std::uint64_t> last_k(kEntries, 0);
  std::vector<zcal_key> keys(kEntries);
  for (std::uint32_t j = 0; j < kEntries; ++j)
    zcal_key_from_string(("10.0." + std::to_string(j) + ".7").c_str(), nullptr, &keys[j]);
  std::uint64_t last_generation = 0;
  std::uint64_t same_generation_reads = 0;
  // No stopwatch: the loop ends when both counts are reached (the suite's
  // timeout catches a writer that never gets to run).
  while (t.reads < kReadsPerTest || t.generations_seen < kMinGenerations) {
    // On a busy host the writer may get little CPU: let it publish now and
    // then, so that more reads race with a publish instead of reusing one
    // copy. Not often: under load a yield can cost a whole time slice.
    if (same_generation_reads > 1024) {
      std::this_thread::yield();
      same_generation_reads = 0;
    }
    const std::uint32_t j = static_cast<std::uint32_t>(t.reads % kEntries);
    zcal_result r;
    const int rc = zcal_lookup(h, &keys[j], ZCAL_METHOD_MSG_ZEROCOPY, &r);
    if (rc == -EAGAIN) {
      // The writer was preempted mid-publish: a transport would fall back.
      ++t.busy;
      std::this_thread::yield();
      continue;
    }
    if (rc != 0) {
      // The first lookups may precede the first publish.
      if (rc != -ENODATA || last_generation != 0) ++t.other_errors;
      if (t.other_errors > 100) break;
      continue;
    }
    ++t.reads;
    if (r.generation != last_generation) {
      ++t.generations_seen;
      last_generation = r.generation;
      same_generation_reads = 0;
    } else {
      ++same_generation_reads;
    }
    const std::uint64_t k = CheckResult(r, j);
    if (k == UINT64_MAX) {
      ++t.torn;
    } else {
      if (k < last_k[j]) ++t.backwards;
      last_k[j] = k;
    }
    // Now and then, the whole copy: every entry from the same publish.
    if (t.reads % 64 == 0) {
      zcal_info info;
      if (zcal_read_info(h, &info) != 0 || info.count != kEntries) continue;
      ++t.table_checks;
      std::uint64_t first_k = UINT64_MAX;
      for (std::uint32_t i = 0; i < info.count; ++i) {
        zcal_shm_entry e;
        zcal_read_entry(h, i, &e);
        const std::uint64_t ek = (e.threshold_bytes - i - 1) / kEntries;
        if (e.fingerprint != Fingerprint(ek, i) || e.measured_at_ns != ek * 1000 + i ||
            (first_k != UINT64_MAX && ek != first_k))
          ++t.torn;
        first_k = ek;
      }
    }
  }
  stop = true;
  publisher.join();
  return t;
}

void Report(const Tally& t) {
  ::testing::Test::RecordProperty("reads", std::to_string(t.reads));
  ::testing::Test::RecordProperty("generations_seen", std::to_string(t.generations_seen));
  std::printf("reads %llu, generations seen %llu, whole-table checks %llu, busy (EAGAIN) %llu\n",
              static_cast<unsigned long long>(t.reads),
              static_cast<unsigned long long>(t.generations_seen),
              static_cast<unsigned long long>(t.table_checks),
              static_cast<unsigned long long>(t.busy));
  EXPECT_GE(t.reads, kReadsPerTest);
  EXPECT_EQ(t.torn, 0u);
  EXPECT_EQ(t.backwards, 0u) << "a reader saw an older publish after a newer one";
  EXPECT_EQ(t.other_errors, 0u);
  // Without many distinct publishes the test would prove nothing.
  EXPECT_GE(t.generations_seen, kMinGenerations);
}

// The reader maps the segment itself, as applications do.
TEST(ShmConcurrency, NoTornReadsThroughItsOwnMapping) {
  ScopedName name("concurrency");
  auto writer = MakeWriter(name, kEntries);
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &h), 0);
  Report(Hammer(h, *writer));
  zcal_close(h);
}

// The reader reads the writer's own mapping, so that ThreadSanitizer sees
// both sides of every access.
TEST(ShmConcurrency, NoTornReadsInTheWritersMapping) {
  ScopedName name("concurrency-shared");
  auto writer = MakeWriter(name, kEntries);
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_internal_attach(writer->mapping(), writer->mapping_bytes(), &h), 0);
  Report(Hammer(h, *writer));
  zcal_close(h);
}

}  // namespace

}  // namespace shm_concurrency_test
