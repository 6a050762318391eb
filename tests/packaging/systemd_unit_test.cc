// The unit `meson install` puts in place (deploy/systemd/zcal-agent.service.in
// configured with the installed paths) passes `systemd-analyze verify`, runs
// the installed binary with the installed configuration, and provides the
// directory of the default state path. scripts/test-package.sh verifies the
// unit the Debian package installs as well.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "test_util.h"

namespace zcal::agent::testing::systemd_unit_test {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::string ConfiguredUnit() { return ReadFile(Env("ZCAL_UNIT")); }

void ReplaceAll(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

TEST(SystemdUnit, RunsTheInstalledBinaryWithTheInstalledConfig) {
  const std::string unit = ConfiguredUnit();
  const std::string command =
      Env("ZCAL_INSTALLED_BINARY") + " agent --config " + Env("ZCAL_INSTALLED_CONFIG");
  EXPECT_NE(unit.find("\nExecStart=" + command + "\n"), std::string::npos) << unit;
  EXPECT_NE(unit.find("\nExecStartPre=" + command + " --check-config\n"),
            std::string::npos)
      << unit;
  // @name@, not the system-call groups (@system-service) the unit names.
  std::smatch variable;
  EXPECT_FALSE(std::regex_search(unit, variable, std::regex("@[a-z_]+@")))
      << "an unsubstituted " << variable.str();
}

TEST(SystemdUnit, ChecksTheConfigurationBeforeReload) {
  // The check first: a broken file fails `systemctl reload` with its
  // FILE:LINE:COLUMN errors instead of a SIGHUP the agent rejects quietly.
  const std::string unit = ConfiguredUnit();
  const std::string check = "\nExecReload=" + Env("ZCAL_INSTALLED_BINARY") +
                            " agent --config " + Env("ZCAL_INSTALLED_CONFIG") +
                            " --check-config\n";
  const std::size_t check_at = unit.find(check);
  const std::size_t signal_at = unit.find("\nExecReload=/bin/sh -c 'kill -HUP $MAINPID'\n");
  ASSERT_NE(check_at, std::string::npos) << unit;
  ASSERT_NE(signal_at, std::string::npos) << unit;
  EXPECT_LT(check_at, signal_at);
}

TEST(SystemdUnit, AllowsOnlyTheNamespacesOfTheDiscardPath) {
  // The discard path unshares CLONE_NEWUSER | CLONE_NEWNET; nothing else.
  const std::string unit = ConfiguredUnit();
  EXPECT_NE(unit.find("\nRestrictNamespaces=user net\n"), std::string::npos) << unit;
  EXPECT_EQ(unit.find("\nRestrictNamespaces=yes\n"), std::string::npos);
}

TEST(SystemdUnit, ProvidesTheDirectoryOfTheDefaultStatePath) {
  // configs/default.yaml keeps the state in /run/zcal.
  EXPECT_NE(ConfiguredUnit().find("\nRuntimeDirectory=zcal\n"), std::string::npos);
  EXPECT_NE(ConfiguredUnit().find("\nRuntimeDirectoryPreserve=yes\n"), std::string::npos);
}

TEST(SystemdUnit, Verifies) {
  if (access("/usr/bin/systemd-analyze", X_OK) != 0) {
    GTEST_SKIP() << "systemd-analyze is not installed";
  }
  TempDir dir;
  std::string unit = ConfiguredUnit();
  // Verify against the binary under test instead of the installed path,
  // which need not exist yet; for the same reason not the man: link to
  // zcal-agent(1) (the package test checks it installed).
  ReplaceAll(unit, Env("ZCAL_INSTALLED_BINARY"), Env("ZCAL"));
  const std::filesystem::path file = dir.path() / "zcal-agent.service";
  WriteFile(file, unit);
  const CommandResult result =
      RunCommand({"/usr/bin/systemd-analyze", "verify", "--man=no", file.string()});
  EXPECT_EQ(result.status, 0) << result.out << result.err;
  EXPECT_EQ(result.out + result.err, "");
}

// The overall exposure systemd-analyze security gives the unit (lower is
// better, 0-10), from its last line "... zcal-agent.service: 1.8 OK ...".
TEST(SystemdUnit, ExposureIsBelowFour) {
  if (access("/usr/bin/systemd-analyze", X_OK) != 0) {
    GTEST_SKIP() << "systemd-analyze is not installed";
  }
  // --offline: judged from the file alone, without a running manager
  // (systemd 250 and later). scripts/test-systemd.sh asks the manager that
  // runs the installed unit as well.
  const CommandResult result = RunCommand(
      {"/usr/bin/systemd-analyze", "security", "--offline=true", "--no-pager", Env("ZCAL_UNIT")});
  ASSERT_EQ(result.status, 0) << result.out << result.err;
  const std::string marker = "Overall exposure level for zcal-agent.service: ";
  const std::size_t at = result.out.find(marker);
  ASSERT_NE(at, std::string::npos) << result.out << result.err;
  const double exposure = std::stod(result.out.substr(at + marker.size()));
  EXPECT_LT(exposure, 4.0) << result.out;
}

}  // namespace
}  // namespace zcal::agent::testing::systemd_unit_test
