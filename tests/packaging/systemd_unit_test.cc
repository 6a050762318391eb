// The unit `meson install` puts in place (deploy/systemd/zcal-agent.service.in
// configured with the installed paths) passes `systemd-analyze verify`, runs
// the installed binary with the installed configuration, and provides the
// directory of the default state path. scripts/test-package.sh verifies the
// unit the Debian package installs as well.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "test_util.h"

namespace zcal::agent::testing {
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
  EXPECT_EQ(unit.find('@'), std::string::npos) << "an unsubstituted @variable@";
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

}  // namespace
}  // namespace zcal::agent::testing
