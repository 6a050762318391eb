// The lookup index (hash table of peer prefixes, the per-key prefix-length
// filter, the precomputed answers) against a plain scan of the table: for
// random tables of nested networks and keys near them, the index answers
// with exactly the entry a longest-prefix scan finds.
#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "handle.h"
#include "segment_image.h"
#include "zcal/zcal.h"

// This file's names, apart from other test files' (unity builds).
namespace reader_index_test {
namespace {

using zcal::test::MakeEntry;
using zcal::test::SegmentImage;

constexpr std::uint8_t kMethods[] = {ZCAL_METHOD_MSG_ZEROCOPY, ZCAL_METHOD_URING_SEND_ZC};
// Around the filter's cut (16 bits for IPv4, 32 for IPv6) and the words.
constexpr std::uint8_t kV4Lengths[] = {0, 1, 7, 8, 15, 16, 17, 23, 24, 31, 32};
constexpr std::uint8_t kV6Lengths[] = {0, 1, 31, 32, 33, 48, 63, 64, 65, 96, 127, 128};

using Address = std::array<std::uint8_t, 16>;

bool SamePrefix(const Address& a, const std::uint8_t* b, unsigned bits) {
  for (unsigned i = 0; i < bits; ++i) {
    const unsigned byte = i / 8, shift = 7 - i % 8;
    if (((a[byte] >> shift) & 1u) != ((b[byte] >> shift) & 1u)) return false;
  }
  return true;
}

// The entry a longest-prefix scan picks (the first of equal ones), else the
// first host default of the method; -1 when neither exists.
int Scan(const std::vector<zcal_shm_entry>& table, std::uint8_t family, const Address& address,
         std::uint8_t method) {
  int best = -1, best_len = -1;
  for (std::size_t i = 0; i < table.size(); ++i) {
    const zcal_shm_entry& e = table[i];
    if (e.scope != ZCAL_SCOPE_PEER || e.method != method || e.family != family) continue;
    if (e.prefix_len > best_len && SamePrefix(address, e.address, e.prefix_len)) {
      best = static_cast<int>(i);
      best_len = e.prefix_len;
    }
  }
  if (best >= 0) return best;
  for (std::size_t i = 0; i < table.size(); ++i)
    if (table[i].scope == ZCAL_SCOPE_HOST_DEFAULT && table[i].method == method)
      return static_cast<int>(i);
  return -1;
}

class Tables {
 public:
  explicit Tables(std::uint64_t seed) : rng_(seed) {
    for (auto& base : bases_)
      for (auto& byte : base) byte = static_cast<std::uint8_t>(rng_());
  }

  // An address near one of a few bases: nested networks share leading bits.
  Address Near() {
    Address a = bases_[rng_() % bases_.size()];
    const unsigned flips = rng_() % 4;
    for (unsigned f = 0; f < flips; ++f) {
      const unsigned bit = rng_() % 128;
      a[bit / 8] ^= static_cast<std::uint8_t>(1u << (7 - bit % 8));
    }
    return a;
  }

  zcal_shm_entry RandomPeer(std::uint64_t id) {
    const bool v4 = rng_() % 2 == 0;
    const std::uint8_t len = v4 ? kV4Lengths[rng_() % std::size(kV4Lengths)]
                                : kV6Lengths[rng_() % std::size(kV6Lengths)];
    zcal_shm_entry e =
        MakeEntry(ZCAL_SCOPE_PEER, kMethods[rng_() % 2], ZCAL_VERDICT_THRESHOLD, id);
    e.family = v4 ? ZCAL_FAMILY_IPV4 : ZCAL_FAMILY_IPV6;
    e.prefix_len = len;
    const Address a = Near();
    std::memcpy(e.address, a.data(), v4 ? 4 : 16);
    return e;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
  std::array<Address, 6> bases_{};
};

// Fills a segment of `capacity` with `count` entries (one default per
// method among them when `with_default`), then checks `keys` lookups per
// method. Returns how many of them a peer entry answered.
int CheckAgainstScan(std::uint64_t seed, std::uint32_t capacity, std::uint32_t count,
                      bool with_default, int keys) {
  Tables tables(seed);
  SegmentImage image(capacity);
  std::vector<zcal_shm_entry> table;
  if (with_default) {
    for (std::uint8_t m : kMethods) {
      table.push_back(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, m, ZCAL_VERDICT_THRESHOLD,
                                1000000 + m));
    }
  }
  while (table.size() < count) table.push_back(tables.RandomPeer(table.size() + 1));
  for (const zcal_shm_entry& e : table) image.Add(e);

  zcal_handle* h = nullptr;
  EXPECT_EQ(zcal_internal_attach(image.data(), image.size(), &h), 0) << zcal_error_detail();
  if (h == nullptr) return 0;
  int peers_found = 0;
  for (int k = 0; k < keys; ++k) {
    // Half the keys sit inside a published network, half anywhere near.
    zcal_key key{};
    Address a = tables.Near();
    if (k % 2 == 0 && !table.empty()) {
      const zcal_shm_entry& e = table[tables.rng()() % table.size()];
      if (e.scope == ZCAL_SCOPE_PEER) {
        std::memcpy(a.data(), e.address, 16);
        for (unsigned bit = e.prefix_len; bit < 128; ++bit)
          if (tables.rng()() % 2) a[bit / 8] ^= static_cast<std::uint8_t>(1u << (7 - bit % 8));
      }
    }
    key.family = k % 3 == 0 ? ZCAL_FAMILY_IPV6 : ZCAL_FAMILY_IPV4;
    if (key.family == ZCAL_FAMILY_IPV4) std::fill(a.begin() + 4, a.end(), 0);
    std::memcpy(key.address, a.data(), 16);
    for (std::uint8_t m : kMethods) {
      const int want = Scan(table, key.family, a, m);
      zcal_result r;
      const int rc = zcal_lookup(h, &key, m, &r);
      char text[INET6_ADDRSTRLEN] = "";
      inet_ntop(key.family == ZCAL_FAMILY_IPV4 ? AF_INET : AF_INET6, a.data(), text,
                sizeof text);
      if (want < 0) {
        EXPECT_EQ(rc, -ENODATA) << text << " method " << int{m};
        continue;
      }
      EXPECT_EQ(rc, 0) << text << " method " << int{m};
      if (rc != 0) continue;
      const zcal_shm_entry& e = table[static_cast<std::size_t>(want)];
      EXPECT_EQ(r.threshold_bytes, e.threshold_bytes) << text << " method " << int{m};
      EXPECT_EQ(r.scope, e.scope);
      EXPECT_EQ(r.prefix_len, e.scope == ZCAL_SCOPE_PEER ? e.prefix_len : 0);
      peers_found += e.scope == ZCAL_SCOPE_PEER;
    }
  }
  zcal_close(h);
  return peers_found;
}

// The keys must reach the peers, or the comparison proves little.
TEST(LookupIndex, MatchesALongestPrefixScan) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed)
    EXPECT_GT(CheckAgainstScan(seed, 256, 256, true, 400), 100) << "seed " << seed;
}

TEST(LookupIndex, MatchesAScanWithoutADefault) {
  for (std::uint64_t seed = 100; seed <= 110; ++seed)
    EXPECT_GT(CheckAgainstScan(seed, 64, 40, false, 300), 75) << "seed " << seed;
}

TEST(LookupIndex, MatchesAScanInAFullLargeSegment) {
  // Thousands of peers of a few bases: long runs of shared leading bits,
  // many entries per filter bucket, duplicates whose first must win.
  EXPECT_GT(CheckAgainstScan(7, 4096, 4096, true, 4000), 1000);
}

TEST(LookupIndex, MatchesAScanInTheSmallestSegment) {
  int found = 0;
  for (std::uint64_t seed = 200; seed <= 230; ++seed) found += CheckAgainstScan(seed, 1, 1, false, 20);
  EXPECT_GT(found, 30);
}

TEST(LookupIndex, RebuildsForEachCopy) {
  // A table replaced by a publish leaves nothing behind in the index: the
  // second table's answers match its own scan, with the first's gone.
  Tables tables(42);
  SegmentImage image(128);
  std::vector<zcal_shm_entry> first, second;
  for (std::uint64_t i = 1; i <= 128; ++i) first.push_back(tables.RandomPeer(i));
  for (std::uint64_t i = 1; i <= 20; ++i) second.push_back(tables.RandomPeer(500 + i));
  for (const zcal_shm_entry& e : first) image.Add(e);
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_internal_attach(image.data(), image.size(), &h), 0);
  zcal_key key{};
  zcal_result r;
  EXPECT_EQ(zcal_lookup(h, &key, kMethods[0], &r), -ENODATA) << "a key of no family";

  image.header().count = 0;
  for (const zcal_shm_entry& e : second) image.Add(e);
  image.header().seq += 2;
  image.header().generation += 1;
  int found = 0;
  for (const zcal_shm_entry& e : first) {
    std::memset(&key, 0, sizeof key);
    key.family = e.family;
    std::memcpy(key.address, e.address, 16);
    Address a{};
    std::memcpy(a.data(), e.address, 16);
    const int want = Scan(second, e.family, a, e.method);
    const int rc = zcal_lookup(h, &key, e.method, &r);
    if (want < 0) {
      EXPECT_EQ(rc, -ENODATA);
    } else {
      ASSERT_EQ(rc, 0);
      EXPECT_EQ(r.threshold_bytes, second[static_cast<std::size_t>(want)].threshold_bytes);
      EXPECT_EQ(r.generation, image.header().generation);
      ++found;
    }
  }
  zcal_close(h);
  EXPECT_GT(found, 0) << "the old addresses must reach some of the new networks";
}

}  // namespace

}  // namespace reader_index_test
