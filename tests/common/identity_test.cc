#include "zcal/common/identity.h"

#include <grp.h>
#include <unistd.h>

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

}  // namespace
}  // namespace zcal::common::identity_test
