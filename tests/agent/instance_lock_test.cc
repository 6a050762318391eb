#include "zcal/agent/service/instance_lock.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "test_util.h"

namespace zcal::agent::instance_lock_test {
namespace {

using testing::TempDir;

TEST(InstanceLock, SecondHolderIsRefusedWithTheFirstOnesPid) {
  TempDir dir;
  auto first = InstanceLock::Acquire("/zcal-lock-test", dir.path().string());
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ((*first)->path(), (dir.path() / "zcal-lock-test.lock").string());
  // flock locks belong to the open file description: a second open in the
  // same process conflicts just as another process would.
  auto second = InstanceLock::Acquire("/zcal-lock-test", dir.path().string());
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, Errc::kBusy);
  const std::string& message = second.error().message;
  EXPECT_NE(message.find("another zcal agent (pid " + std::to_string(getpid()) +
                         ")"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("segment /zcal-lock-test"), std::string::npos);
  EXPECT_NE(message.find("segment.name"), std::string::npos);
}

TEST(InstanceLock, IsReleasedWhenTheHolderGoes) {
  TempDir dir;
  {
    auto first = InstanceLock::Acquire("/zcal-lock-test", dir.path().string());
    ASSERT_TRUE(first);
  }
  auto again = InstanceLock::Acquire("/zcal-lock-test", dir.path().string());
  EXPECT_TRUE(again) << again.error().message;
}

TEST(InstanceLock, IsReleasedWhenTheHolderIsKilled) {
  TempDir dir;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    auto lock = InstanceLock::Acquire("/zcal-lock-test", dir.path().string());
    const char byte = lock ? 1 : 0;
    [[maybe_unused]] ssize_t n = write(ready[1], &byte, 1);
    pause();
    _exit(0);
  }
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, 1);
  EXPECT_FALSE(InstanceLock::Acquire("/zcal-lock-test", dir.path().string()));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(InstanceLock::Acquire("/zcal-lock-test", dir.path().string()));
  close(ready[0]);
  close(ready[1]);
}

TEST(InstanceLock, RefusesASymbolicLink) {
  TempDir dir;
  std::filesystem::create_symlink(dir.path() / "elsewhere",
                                  dir.path() / "zcal-lock-test.lock");
  auto lock = InstanceLock::Acquire("/zcal-lock-test", dir.path().string());
  ASSERT_FALSE(lock);
  EXPECT_EQ(lock.error().code, Errc::kPermission);
  EXPECT_NE(lock.error().message.find("symbolic link"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "elsewhere"));
}

TEST(InstanceLock, ReportsAMissingDirectory) {
  auto lock = InstanceLock::Acquire("/zcal-lock-test", "/nonexistent/zcal");
  ASSERT_FALSE(lock);
  EXPECT_EQ(lock.error().code, Errc::kIo);
  EXPECT_NE(lock.error().message.find("/nonexistent/zcal/zcal-lock-test.lock"),
            std::string::npos);
}

}  // namespace
}  // namespace zcal::agent::instance_lock_test
