#include "zcal/common/identity.h"

#include <grp.h>
#include <unistd.h>

#include <cstdio>

#include <gtest/gtest.h>

namespace zcal::common::identity_test {
namespace {

TEST(Identity, ResolvesGroupsByNameAndNumber) {
  const Result<gid_t> root = ResolveGroup("root");
  ASSERT_TRUE(root) << root.error().message;
  EXPECT_EQ(*root, 0u);
  EXPECT_EQ(*ResolveGroup("4242"), 4242u);
  // The group of this process, whatever its name (the lookup retries with a
  // larger buffer on ERANGE, so large member lists resolve too).
  const struct group* mine = ::getgrgid(::getgid());
  if (mine != nullptr) {
    EXPECT_EQ(*ResolveGroup(mine->gr_name), ::getgid());
  }
}

TEST(Identity, AMissingGroupIsNotFoundWithWhatToDo) {
  const Result<gid_t> none = ResolveGroup("zcal-no-such-group");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Errc::kNotFound);
  EXPECT_NE(none.error().message.find("no group named 'zcal-no-such-group'"),
            std::string::npos);
}

TEST(Identity, NamesUsersOrSaysTheUid) {
  EXPECT_EQ(UserName(0), "root");
  EXPECT_EQ(UserName(4'000'000'000u), "uid 4000000000");
}

// The CapEff line of a status file, bit by bit; what cannot be read or
// parsed is no answer, not a "no".
TEST(Identity, ReadsACapabilityFromTheEffectiveSet) {
  // A directory of mkdtemp's own (the template's XXXXXX become a unique
  // name), under gtest's temporary directory.
  std::string dir = ::testing::TempDir() + "zcal-capeff-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr) << dir;
  const std::string file = dir + "/status";
  const auto write = [&](const char* text) {
    FILE* f = std::fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr) << file;
    std::fputs(text, f);
    std::fclose(f);
  };
  write("Name:\tzcal\nCapPrm:\tffffffffffffffff\nCapEff:\t0000000000200008\n");
  EXPECT_EQ(EffectiveCapability(file, 3), true);    // CAP_FOWNER
  EXPECT_EQ(EffectiveCapability(file, 21), true);   // CAP_SYS_ADMIN
  EXPECT_EQ(EffectiveCapability(file, 14), false);  // CAP_IPC_LOCK
  EXPECT_EQ(EffectiveCapability(file, 64), std::nullopt);
  write("Name:\tzcal\nCapEff:\tzz\n");
  EXPECT_EQ(EffectiveCapability(file, 3), std::nullopt);
  write("Name:\tzcal\n");
  EXPECT_EQ(EffectiveCapability(file, 3), std::nullopt);
  std::remove(file.c_str());
  rmdir(dir.c_str());
  EXPECT_EQ(EffectiveCapability(file, 3), std::nullopt);
  EXPECT_TRUE(EffectiveCapability("/proc/self/status", 3).has_value());
}

}  // namespace
}  // namespace zcal::common::identity_test
