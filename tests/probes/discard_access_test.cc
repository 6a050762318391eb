// The sentences that say why the discard path cannot run: every branch,
// from what the helper tried and what a fake procfs says.
#include "discard_access.h"

#include <cerrno>
#include <cstdlib>

#include <gtest/gtest.h>

#include "zcal/testing/test_data.h"

namespace zcal::probes::discard_access_test {
namespace {

std::string FakeRoot() {
  return (zcal::testing::TestData() / "sysfs" / "userns-off").string();
}

void ExpectMentions(const std::string& text, std::initializer_list<const char*> parts) {
  for (const char* part : parts) {
    EXPECT_NE(text.find(part), std::string::npos) << "\"" << part << "\" missing in: " << text;
  }
}

TEST(DiscardAccess, ReadsCapabilitiesAndSysctlsUnderTheRoot) {
  const AccessFacts facts = ReadAccessFacts(FakeRoot());
  EXPECT_EQ(facts.cap_sys_admin, false);
  EXPECT_EQ(facts.unprivileged_userns_clone, "0");
  EXPECT_EQ(facts.max_user_namespaces, "0");
  EXPECT_EQ(facts.apparmor_restrict_unprivileged_userns, "1");
  const AccessFacts none = ReadAccessFacts(FakeRoot() + "/nonexistent");
  EXPECT_FALSE(none.cap_sys_admin.has_value());
  EXPECT_FALSE(none.max_user_namespaces.has_value());
}

TEST(DiscardAccess, WithoutCapSysAdminAndWithUnprivilegedUsernsOffNamesBothFixes) {
  AccessFacts facts;
  facts.cap_sys_admin = false;
  facts.unprivileged_userns_clone = "0";
  const Error error = NamespaceFailure({EPERM, EPERM}, facts);
  EXPECT_EQ(error.code, Errc::kUnsupported);
  ExpectMentions(error.message,
                 {"unshare(CLONE_NEWNET) failed with EPERM", "lacks CAP_SYS_ADMIN",
                  "unshare(CLONE_NEWUSER | CLONE_NEWNET) failed with EPERM",
                  "kernel.unprivileged_userns_clone = 0", "run zcal as root or with CAP_SYS_ADMIN",
                  "sysctl kernel.unprivileged_userns_clone=1"});
}

TEST(DiscardAccess, NamesAZeroUserNamespaceLimit) {
  AccessFacts facts;
  facts.cap_sys_admin = false;
  facts.max_user_namespaces = "0";
  ExpectMentions(NamespaceFailure({EPERM, ENOSPC}, facts).message,
                 {"ENOSPC", "user.max_user_namespaces = 0", "sysctl user.max_user_namespaces="});
  facts.max_user_namespaces.emplace("5");  // not `= "5"`: GCC 12 -O3 warns (-Wrestrict)
  ExpectMentions(NamespaceFailure({EPERM, ENOSPC}, facts).message,
                 {"user.max_user_namespaces = 5 is reached", "raise user.max_user_namespaces"});
}

TEST(DiscardAccess, NamesAppArmorsRestriction) {
  AccessFacts facts;
  facts.cap_sys_admin = false;
  facts.apparmor_restrict_unprivileged_userns = "1";
  ExpectMentions(NamespaceFailure({EPERM, EACCES}, facts).message,
                 {"kernel.apparmor_restrict_unprivileged_userns = 1",
                  "kernel.apparmor_restrict_unprivileged_userns=0"});
}

TEST(DiscardAccess, BlamesASeccompFilterWhenThePrivilegeIsThere) {
  AccessFacts facts;
  facts.cap_sys_admin = true;
  const std::string text = NamespaceFailure({EPERM, EPERM}, facts).message;
  ExpectMentions(text, {"although the process has CAP_SYS_ADMIN", "seccomp",
                        "allow unshare(2) in the seccomp profile"});
  // One fix, said once.
  EXPECT_EQ(text.find("allow unshare(2)"), text.rfind("allow unshare(2)")) << text;
  ExpectMentions(NamespaceFailure({ENOSYS, ENOSYS}, {}).message, {"ENOSYS", "seccomp"});
}

TEST(DiscardAccess, NamesMissingKernelSupport) {
  ExpectMentions(NamespaceFailure({EINVAL, EINVAL}, {}).message,
                 {"CONFIG_NET_NS=y", "CONFIG_USER_NS=y"});
}

TEST(DiscardAccess, AnUnknownQdiscIsUnsupportedWithTheKernelsWords) {
  const Error error =
      SetupFailure(SetupStep::kQdisc, ENOENT, "Specified qdisc kind is unknown", "blackhole");
  EXPECT_EQ(error.code, Errc::kUnsupported);
  ExpectMentions(error.message, {"\"blackhole\"", "RTM_NEWQDISC", "ENOENT",
                                 "Specified qdisc kind is unknown", "CONFIG_NET_SCHED=y",
                                 "modprobe sch_blackhole"});
  const Error no_tc = SetupFailure(SetupStep::kQdisc, EOPNOTSUPP, "", "blackhole");
  EXPECT_EQ(no_tc.code, Errc::kUnsupported);
  ExpectMentions(no_tc.message, {"EOPNOTSUPP", "no traffic control", "CONFIG_NET_SCHED=y"});
}

TEST(DiscardAccess, OtherSetupErrorsAreFailuresNamingTheStep) {
  const Error qdisc = SetupFailure(SetupStep::kQdisc, EPERM, "", "blackhole");
  EXPECT_EQ(qdisc.code, Errc::kFailed);
  ExpectMentions(qdisc.message, {"RTM_NEWQDISC", "EPERM"});
  const Error up = SetupFailure(SetupStep::kLinkUp, ENODEV, "", "blackhole");
  EXPECT_EQ(up.code, Errc::kFailed);
  ExpectMentions(up.message, {"bringing lo up", "RTM_NEWLINK", "ENODEV"});
  ExpectMentions(SetupFailure(SetupStep::kLoopbackIndex, ENODEV, "", "blackhole").message,
                 {"no lo", "ENODEV"});
  ExpectMentions(SetupFailure(SetupStep::kNetlinkSocket, EMFILE,
                              "socket(AF_NETLINK, NETLINK_ROUTE) failed", "blackhole")
                     .message,
                 {"NETLINK_ROUTE", "EMFILE"});
}

}  // namespace
}  // namespace zcal::probes::discard_access_test
