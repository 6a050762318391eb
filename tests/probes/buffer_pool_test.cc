// The buffers a probe sends from: a pool of its own, or one cut from the
// arena that a calibration's probes share.
#include "zcal/probes/send/buffer_pool.h"

#include <cstdint>
#include <cstring>

#include <gtest/gtest.h>

namespace zcal::probes {
namespace {

bool FilledWithData(const BufferPool& pool) {
  for (std::uint32_t i = 0; i < pool.count(); ++i) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(pool.buffer(i));
    for (std::uint64_t b = 0; b < pool.buffer_bytes(); ++b) {
      if (bytes[b] != 0x5a) return false;
    }
  }
  return true;
}

TEST(BufferPool, CutsAlignedBuffersOfRealData) {
  auto pool = BufferPool::Allocate(8, 1000);
  ASSERT_TRUE(pool) << pool.error().message;
  EXPECT_EQ((*pool)->count(), 8u);
  EXPECT_EQ((*pool)->buffer_bytes(), 1000u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>((*pool)->buffer(1)) % 64, 0u);
  EXPECT_EQ((*pool)->mapped_bytes(), 8u * 1024u);
  EXPECT_TRUE(FilledWithData(**pool));
  EXPECT_FALSE(BufferPool::Allocate(0, 1000));
}

TEST(BufferArena, ReusesOneMappingAndFillsEachPoolAgain) {
  BufferArena arena;
  EXPECT_EQ(arena.mapped_bytes(), 0u);
  std::byte* first_base = nullptr;
  {
    auto pool = arena.Pool(128, 16384);
    ASSERT_TRUE(pool) << pool.error().message;
    first_base = (*pool)->base();
    EXPECT_EQ((*pool)->mapped_bytes(), 128u * 16384u);
    // A probe's sends leave the buffers as they are; the next pool is
    // written again.
    std::memset((*pool)->base(), 0, (*pool)->mapped_bytes());
  }
  EXPECT_EQ(arena.mapped_bytes(), 128u * 16384u) << "the mapping outlives the pool";
  auto smaller = arena.Pool(16, 65536);
  ASSERT_TRUE(smaller);
  EXPECT_EQ((*smaller)->base(), first_base) << "no new mapping for a pool that fits";
  EXPECT_EQ((*smaller)->count(), 16u);
  EXPECT_EQ((*smaller)->buffer_bytes(), 65536u);
  EXPECT_TRUE(FilledWithData(**smaller));
  smaller->reset();
  auto larger = arena.Pool(8, 1 << 20);
  ASSERT_TRUE(larger);
  EXPECT_EQ(arena.mapped_bytes(), 8u << 20) << "grown for a pool that does not fit";
  EXPECT_TRUE(FilledWithData(**larger));
  EXPECT_FALSE(arena.Pool(0, 1));
}

}  // namespace
}  // namespace zcal::probes
