// zcal doctor's checks on fake procfs/sysfs trees (tests/data/doctor) and
// observations written by hand: one case per warn and fail, and a healthy
// host whose every line is ok.
#include "zcal/agent/doctor/doctor.h"

#include <sys/utsname.h>

#include <cerrno>

#include <gtest/gtest.h>

#include "probes_live.h"
#include "zcal/testing/test_data.h"
#include "zcal/testing/path_ids.h"

namespace zcal::agent::doctor::doctor_test {
namespace {

using zcal::testing::ConfiguredPath;
using zcal::testing::PeerPath;

using calibrator::Method;

constexpr std::uint64_t kNow = 1'800'000'000'000'000'000ULL;

std::string Root(const char* name) { return (zcal::testing::TestData() / "doctor" / name).string(); }

DoctorOptions OptionsAt(const char* root) {
  DoctorOptions options;
  options.root = Root(root);
  options.state_path = "/run/zcal/state.json";
  return options;
}

probes::InterfaceFacts Nic(std::string name, std::string iommu_type) {
  probes::InterfaceFacts nic;
  nic.name = std::move(name);
  nic.pci_device = "0000:3b:00.0";
  nic.iommu_group = iommu_type.empty() ? "" : "20";
  nic.iommu_type = std::move(iommu_type);
  nic.sg = true;
  nic.tso = true;
  return nic;
}

// Everything as a well-set host shows it: a running agent, a calibration,
// io_uring with REPORT_USAGE, namespaces, memory.
Observations Healthy() {
  Observations seen;
  seen.uring = {0, true, true, true};
  seen.namespaces.userns_errno = 0;
  seen.namespaces.netns_optmem_max = 131072;
  seen.memlock.soft_bytes = 8 << 20;
  seen.host.kernel_release = "6.18.0-1-amd64";
  seen.host.devices = {Nic("lo", ""), Nic("eth0", "identity")};
  seen.egress_interface = "eth0";
  zcal_info info{};
  info.agent_pid = 4242;
  info.heartbeat_ns = kNow - 1'000'000'000ULL;
  info.count = 3;
  seen.segment.info = info;
  AgentState state;
  state.last_success_ns = kNow - 60'000'000'000ULL;
  state.paths[ConfiguredPath("discard")][Method::kMsgZerocopy].published.verdict =
      calibrator::Verdict::kThreshold;
  seen.state = state;
  seen.now_ns = kNow;
  return seen;
}

// The one finding named `check`; fails the test when there is none.
Finding Find(const std::vector<Finding>& findings, const std::string& check) {
  for (const Finding& f : findings) {
    if (f.check == check) return f;
  }
  ADD_FAILURE() << "no finding " << check;
  return {};
}

Finding Check(const char* root, const Observations& seen, const std::string& check) {
  return Find(Diagnose(OptionsAt(root), seen), check);
}

void ExpectWarnWithFix(const Finding& f, const std::string& fix_part) {
  EXPECT_EQ(f.status, Status::kWarn) << f.check << ": " << f.detail;
  EXPECT_NE(f.fix.find(fix_part), std::string::npos) << f.fix;
}

TEST(Doctor, HealthyHostIsOkEverywhere) {
  const std::vector<Finding> findings = Diagnose(OptionsAt("healthy"), Healthy());
  for (const Finding& f : findings) {
    EXPECT_EQ(f.status, Status::kOk) << f.check << ": " << f.detail << " / " << f.fix;
    EXPECT_TRUE(f.fix.empty()) << f.check;
  }
  EXPECT_EQ(Worst(findings), Status::kOk);
  EXPECT_GE(findings.size(), 12U);
}

TEST(Doctor, EveryLineThatIsNotOkHasAFix) {
  Observations seen = Healthy();
  seen.uring = {EPERM, std::nullopt, std::nullopt, std::nullopt};
  seen.msg_zerocopy = {false, "msg_zerocopy: the socket refused SO_ZEROCOPY"};
  seen.namespaces = {};
  seen.memlock.soft_bytes = 64 * 1024;
  seen.segment = {};
  seen.segment.error = -ENOENT;
  seen.host.kernel_release = "5.15.0";
  for (const Finding& f : Diagnose(OptionsAt("optmem-small"), seen)) {
    if (f.status != Status::kOk) {
      EXPECT_FALSE(f.fix.empty()) << f.check;
    }
  }
}

TEST(Doctor, IoUringDisabledBySysctlIsAWarningWithTheSysctl) {
  Observations seen = Healthy();
  seen.uring = {EPERM, std::nullopt, std::nullopt, std::nullopt};
  const Finding f = Check("uring-disabled", seen, "io_uring");
  ExpectWarnWithFix(f, "kernel.io_uring_disabled=0");
  EXPECT_NE(f.detail.find("EPERM"), std::string::npos) << f.detail;
  ExpectWarnWithFix(Check("uring-disabled", seen, "io_uring.send_zc"), "io_uring line");
}

TEST(Doctor, IoUringForAGroupOnlyNamesTheGroup) {
  Observations seen = Healthy();
  seen.uring = {EPERM, std::nullopt, std::nullopt, std::nullopt};
  ExpectWarnWithFix(Check("uring-group", seen, "io_uring"), "kernel.io_uring_group (1042)");
}

TEST(Doctor, IoUringRefusedDespiteTheSysctlBlamesSeccomp) {
  Observations seen = Healthy();
  seen.uring = {EPERM, std::nullopt, std::nullopt, std::nullopt};
  ExpectWarnWithFix(Check("healthy", seen, "io_uring"), "seccomp");
}

TEST(Doctor, IoUringUnknownToTheKernelIsToldApartFromRefused) {
  Observations seen = Healthy();
  seen.uring = {ENOSYS, std::nullopt, std::nullopt, std::nullopt};
  const Finding f = Check("healthy", seen, "io_uring");
  ExpectWarnWithFix(f, "CONFIG_IO_URING");
  EXPECT_NE(f.detail.find("ENOSYS"), std::string::npos) << f.detail;
}

TEST(Doctor, MissingZerocopyOpcodesAreWarnings) {
  Observations seen = Healthy();
  seen.uring = {0, false, false, std::nullopt};
  ExpectWarnWithFix(Check("healthy", seen, "io_uring.send_zc"), "Linux 6.0");
  seen.uring = {0, true, false, true};
  ExpectWarnWithFix(Check("healthy", seen, "io_uring.send_zc"), "Linux 6.1");
  seen.uring = {0, true, true, false};
  ExpectWarnWithFix(Check("healthy", seen, "io_uring.report_usage"), "Linux 6.2");
}

TEST(Doctor, NoZerocopySendAtAllFails) {
  Observations seen = Healthy();
  seen.msg_zerocopy = {false, "msg_zerocopy: the socket refused SO_ZEROCOPY"};
  EXPECT_EQ(Check("healthy", seen, "msg_zerocopy").status, Status::kWarn);
  seen.uring = {EPERM, std::nullopt, std::nullopt, std::nullopt};
  EXPECT_EQ(Check("healthy", seen, "msg_zerocopy").status, Status::kFail);
}

TEST(Doctor, KernelsBeforeStackingAndForwardingSayWhy) {
  Observations seen = Healthy();
  seen.host.kernel_release = "6.1.0-27-amd64";
  ExpectWarnWithFix(Check("healthy", seen, "kernel.send_zc_stacking"), "6.10");
  // Forwarding matters only where traffic leaves through a veth (a pod).
  EXPECT_EQ(Check("healthy", seen, "kernel.zerocopy_forwarding").status, Status::kOk);
  seen.host.kernel_release = "6.12.0-1-amd64";
  EXPECT_EQ(Check("pod", seen, "kernel.send_zc_stacking").status, Status::kOk);
  ExpectWarnWithFix(Check("pod", seen, "kernel.zerocopy_forwarding"), "hostNetwork");
  seen.host.kernel_release = "6.17.1";
  EXPECT_EQ(Check("pod", seen, "kernel.zerocopy_forwarding").status, Status::kOk);
}

TEST(Doctor, KernelReleaseParses) {
  EXPECT_TRUE(ParseKernelRelease("6.10.0-rc1")->AtLeast(6, 10));
  EXPECT_FALSE(ParseKernelRelease("6.9.12")->AtLeast(6, 10));
  EXPECT_TRUE(ParseKernelRelease("7.0")->AtLeast(6, 17));
  EXPECT_FALSE(ParseKernelRelease("").has_value());
  EXPECT_FALSE(ParseKernelRelease("linux").has_value());
}

TEST(Doctor, OptionMemoryBelowTheDeepestProbeWarnsWithTheNeed) {
  const DoctorOptions options = OptionsAt("optmem-small");
  // 1 KiB sends keep the pool's 128 buffers in flight: 128 notifications.
  EXPECT_EQ(OptionMemoryNeed(options), 128U * 1024);
  const Finding f = Check("optmem-small", Healthy(), "optmem.host");
  ExpectWarnWithFix(f, "net.core.optmem_max=131072");
  EXPECT_NE(f.fix.find("min_size_bytes"), std::string::npos) << f.fix;
  EXPECT_EQ(Check("healthy", Healthy(), "optmem.host").status, Status::kOk);
}

TEST(Doctor, OptionMemoryOfANewNamespaceIsJudgedApart) {
  Observations seen = Healthy();
  seen.namespaces.netns_optmem_max = 20480;
  ExpectWarnWithFix(Check("healthy", seen, "optmem.netns"), "optmem_max");
  seen.namespaces.netns_optmem_max.reset();
  seen.namespaces.netns_uses_host_optmem = true;
  EXPECT_EQ(Check("healthy", seen, "optmem.netns").status, Status::kOk);
  seen.namespaces.netns_uses_host_optmem = false;
  seen.namespaces.netns_note = "no network namespace could be created here";
  ExpectWarnWithFix(Check("healthy", seen, "optmem.netns"), "userns");
}

TEST(Doctor, OptionMemoryIsNotNeededWithoutMsgZerocopy) {
  DoctorOptions options = OptionsAt("optmem-small");
  options.methods = {Method::kCopy, Method::kUringSend, Method::kUringSendZc};
  EXPECT_EQ(Find(CheckOptionMemory(options, Healthy()), "optmem").status, Status::kOk);
}

TEST(Doctor, MemlockBelowTheRegisteredBuffersWarns) {
  // 8 buffers of 256 KiB (the pool's floor at the largest size).
  EXPECT_EQ(MemlockNeed(OptionsAt("healthy")), 2U << 20);
  Observations seen = Healthy();
  seen.memlock.soft_bytes = 1 << 20;
  ExpectWarnWithFix(Check("healthy", seen, "memlock"), "LimitMEMLOCK=");
  seen.memlock.soft_bytes = 0;
  EXPECT_EQ(Check("healthy", seen, "memlock").status, Status::kFail);
  seen.memlock.cap_ipc_lock = true;
  EXPECT_EQ(Check("healthy", seen, "memlock").status, Status::kOk);
  seen.memlock = {std::nullopt, false};
  EXPECT_EQ(Check("healthy", seen, "memlock").status, Status::kOk);
}

TEST(Doctor, CapIpcLockIsReadFromTheRootsStatus) {
  EXPECT_TRUE(ProbeMemlock(Root("cap-ipc-lock")).cap_ipc_lock);
  EXPECT_FALSE(ProbeMemlock(Root("healthy")).cap_ipc_lock);
}

TEST(Doctor, UserNamespacesRefusedNameTheSysctlThatRefuses) {
  Observations seen = Healthy();
  seen.namespaces.userns_errno = EPERM;
  ExpectWarnWithFix(Check("userns-max0", seen, "userns"), "user.max_user_namespaces=");
  ExpectWarnWithFix(Check("userns-clone-off", seen, "userns"),
                    "kernel.unprivileged_userns_clone=1");
  ExpectWarnWithFix(Check("apparmor-userns", seen, "userns"),
                    "kernel.apparmor_restrict_unprivileged_userns=0");
  ExpectWarnWithFix(Check("healthy", seen, "userns"), "seccomp");
  seen.namespaces.userns_errno = ENOSPC;
  ExpectWarnWithFix(Check("healthy", seen, "userns"), "max_user_namespaces");
}

TEST(Doctor, PrivilegedAgentNeedsNoUserNamespace) {
  Observations seen = Healthy();
  seen.namespaces = {};
  seen.namespaces.privileged = true;
  seen.namespaces.netns_errno = 0;
  EXPECT_EQ(Check("userns-max0", seen, "userns").status, Status::kOk);
  seen.namespaces.netns_errno = EPERM;
  ExpectWarnWithFix(Check("userns-max0", seen, "userns"), "CLONE_NEWNET");
}

TEST(Doctor, StrictTranslatedIommuWarnsPerNic) {
  Observations seen = Healthy();
  seen.host =
      probes::CollectHostFacts((zcal::testing::TestData() / "sysfs" / "pci-host").string());
  for (probes::InterfaceFacts& nic : seen.host.devices) nic.sg = nic.tso = true;
  const std::vector<Finding> findings = Diagnose(OptionsAt("healthy"), seen);
  const Finding strict = Find(findings, "nic.eth1.iommu");
  ExpectWarnWithFix(strict, "iommu.strict=0");
  EXPECT_NE(strict.detail.find("iommu.strict=1"), std::string::npos) << strict.detail;
  EXPECT_EQ(Find(findings, "nic.eth0.iommu").status, Status::kOk);  // DMA-FQ
  EXPECT_EQ(Find(findings, "nic.eth2.iommu").status, Status::kOk);  // identity
  EXPECT_EQ(Find(findings, "nic.eth3.iommu").status, Status::kOk);  // virtio, no group
  for (const Finding& f : findings) EXPECT_NE(f.check, "nic.lo.iommu");
}

TEST(Doctor, NicWithoutScatterGatherFailsAndWithoutTsoWarns) {
  Observations seen = Healthy();
  seen.host.devices[1].sg = false;
  const Finding sg = Check("healthy", seen, "nic.eth0.offload");
  EXPECT_EQ(sg.status, Status::kFail);
  EXPECT_EQ(sg.fix, "ethtool -K eth0 sg on (and tso on)");
  seen.host.devices[1].sg = true;
  seen.host.devices[1].tso = false;
  ExpectWarnWithFix(Check("healthy", seen, "nic.eth0.offload"), "ethtool -K eth0 tso on");
  seen.host.devices[1].tso.reset();
  ExpectWarnWithFix(Check("healthy", seen, "nic.eth0.offload"), "ethtool -k eth0");
}

TEST(Doctor, AbsentAgentFails) {
  Observations seen = Healthy();
  seen.segment = {};
  seen.segment.error = -ENOENT;
  const Finding f = Check("healthy", seen, "agent.segment");
  EXPECT_EQ(f.status, Status::kFail);
  EXPECT_NE(f.fix.find("zcal-agent"), std::string::npos) << f.fix;
  seen.segment.error = -EACCES;
  EXPECT_EQ(Check("healthy", seen, "agent.segment").status, Status::kFail);
}

TEST(Doctor, StaleHeartbeatFailsAndUnconfirmedResultsWarn) {
  Observations seen = Healthy();
  seen.segment.info->heartbeat_ns = kNow - 120'000'000'000ULL;
  const Finding gone = Check("healthy", seen, "agent.segment");
  EXPECT_EQ(gone.status, Status::kFail);
  EXPECT_NE(gone.detail.find("120 s ago"), std::string::npos) << gone.detail;
  seen = Healthy();
  seen.segment.info->flags |= ZCAL_FLAG_STALE;
  ExpectWarnWithFix(Check("healthy", seen, "agent.segment"), "kill -USR1 4242");
}

TEST(Doctor, NoCalibrationYetWarns) {
  Observations seen = Healthy();
  seen.state = tl::unexpected(Error{Errc::kNotFound, "no such file"});
  ExpectWarnWithFix(Check("healthy", seen, "agent.calibration"), "--config");
  seen.state = AgentState{};
  ExpectWarnWithFix(Check("healthy", seen, "agent.calibration"), "first calibration");
}

TEST(Doctor, JsonHasTheWorstStatusAndNullFixWhenOk) {
  const std::vector<Finding> findings = {
      {"a", Status::kOk, "fine", ""}, {"b", Status::kWarn, "meh", "do this"}};
  const nlohmann::json json = FindingsJson(findings);
  EXPECT_EQ(json["status"], "warn");
  EXPECT_TRUE(json["checks"][0]["fix"].is_null());
  EXPECT_EQ(json["checks"][1]["fix"], "do this");
  EXPECT_EQ(Worst({}), Status::kOk);
}

// The observations of this machine's kernel: where it has SEND_ZC, the
// REPORT_USAGE request gets an answer, yes from Linux 6.2.
TEST(DoctorLive, ReportUsageIsAnsweredWhereSendZcExists) {
  const UringObservation seen = ProbeUring();
  if (seen.setup_errno != 0) GTEST_SKIP() << "io_uring_setup fails here: " << seen.setup_errno;
  if (seen.send_zc != true) GTEST_SKIP() << "no IORING_OP_SEND_ZC here";
  ASSERT_TRUE(seen.report_usage.has_value());
  utsname name{};
  ASSERT_EQ(uname(&name), 0);
  const std::optional<KernelVersion> v = ParseKernelRelease(name.release);
  ASSERT_TRUE(v.has_value()) << name.release;
  EXPECT_EQ(*seen.report_usage, v->AtLeast(6, 2)) << name.release;
}

TEST(DoctorLive, ANewNetworkNamespaceSaysWhichOptionMemoryApplies) {
  const NamespaceObservation seen = ProbeNamespaces("/");
  const std::optional<int> err = seen.privileged ? seen.netns_errno : seen.userns_errno;
  ASSERT_TRUE(err.has_value()) << seen.netns_note;
  if (*err != 0) GTEST_SKIP() << "no network namespace here: " << seen.netns_note;
  EXPECT_TRUE(seen.netns_optmem_max.has_value() || seen.netns_uses_host_optmem)
      << seen.netns_note;
}

}  // namespace
}  // namespace zcal::agent::doctor::doctor_test
