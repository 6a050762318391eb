// The ABI layout, as documented in docs/shm-abi.md, seen from C and C++.
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "zcal/zcal.h"
#include "zcal/zcal.hpp"

extern "C" {
extern const size_t zcal_test_c_layout[];
extern const size_t zcal_test_c_layout_count;
}

// This file's names, apart from other test files' (unity builds).
namespace layout_test {
namespace {

// Offsets from docs/shm-abi.md, in the order layout_c.c lists them.
const std::vector<std::size_t> kDocumented = {
    128, 0, 8, 10, 12, 16, 20, 24, 32, 40, 48, 56, 60, 64, 72, 80,
    96,  0, 1, 2,  3,  4,  5,  6,  8,  24, 40, 48, 56, 64, 68, 72};

TEST(Layout, CxxOffsetsMatchTheDocumentedLayout) {
  const std::vector<std::size_t> cxx = {
      sizeof(zcal_shm_header),
      offsetof(zcal_shm_header, magic),
      offsetof(zcal_shm_header, abi_major),
      offsetof(zcal_shm_header, abi_minor),
      offsetof(zcal_shm_header, header_size),
      offsetof(zcal_shm_header, entry_size),
      offsetof(zcal_shm_header, capacity),
      offsetof(zcal_shm_header, seq),
      offsetof(zcal_shm_header, generation),
      offsetof(zcal_shm_header, publish_time_ns),
      offsetof(zcal_shm_header, heartbeat_ns),
      offsetof(zcal_shm_header, count),
      offsetof(zcal_shm_header, flags),
      offsetof(zcal_shm_header, agent_pid),
      offsetof(zcal_shm_header, created_ns),
      offsetof(zcal_shm_header, reserved),
      sizeof(zcal_shm_entry),
      offsetof(zcal_shm_entry, scope),
      offsetof(zcal_shm_entry, method),
      offsetof(zcal_shm_entry, verdict),
      offsetof(zcal_shm_entry, reason),
      offsetof(zcal_shm_entry, family),
      offsetof(zcal_shm_entry, prefix_len),
      offsetof(zcal_shm_entry, entry_flags),
      offsetof(zcal_shm_entry, address),
      offsetof(zcal_shm_entry, interface),
      offsetof(zcal_shm_entry, threshold_bytes),
      offsetof(zcal_shm_entry, measured_at_ns),
      offsetof(zcal_shm_entry, fingerprint),
      offsetof(zcal_shm_entry, confidence_ppm),
      offsetof(zcal_shm_entry, depth_class),
      offsetof(zcal_shm_entry, reserved),
  };
  EXPECT_EQ(cxx, kDocumented);
}

TEST(Layout, COffsetsMatchCxxOffsets) {
  std::vector<std::size_t> c(zcal_test_c_layout,
                             zcal_test_c_layout + zcal_test_c_layout_count);
  EXPECT_EQ(c, kDocumented);
}

TEST(Layout, EveryWordIsEightByteAligned) {
  EXPECT_EQ(sizeof(zcal_shm_header) % 8, 0u);
  EXPECT_EQ(sizeof(zcal_shm_entry) % 8, 0u);
  EXPECT_EQ(alignof(zcal_shm_header), 8u);
  EXPECT_EQ(alignof(zcal_shm_entry), 8u);
}

TEST(Layout, MagicSpellsZcalshmInMemory) {
  const std::uint64_t magic = ZCAL_MAGIC;
  char text[8];
  std::memcpy(text, &magic, sizeof text);
  EXPECT_EQ(std::string(text, 7), "ZCALSHM");
  EXPECT_EQ(text[7], '\0');
}

TEST(Layout, WrapperMethodCodesAreTheAbiCodes) {
  EXPECT_EQ(static_cast<int>(zcal::client::Method::kMsgZerocopy), ZCAL_METHOD_MSG_ZEROCOPY);
  EXPECT_EQ(static_cast<int>(zcal::client::Method::kUringSendZcFixed),
            ZCAL_METHOD_URING_SEND_ZC_FIXED);
}

}  // namespace

}  // namespace layout_test
