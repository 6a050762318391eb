#include "zcal/common/bounded_read.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace zcal::common::bounded_read_test {
namespace {

class BoundedRead : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/zcal-bounded-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(BoundedRead, ReadsAFileWithinTheCap) {
  const std::string path = Write("a.yaml", "key: value\n");
  const Result<std::string> text = ReadBounded(path, 64, InputKind::kRegular, "configuration");
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, "key: value\n");
  EXPECT_EQ(*ReadBounded(Write("empty", ""), 0, InputKind::kRegular, "x"), "");
}

TEST_F(BoundedRead, RefusesAFileOverTheCapSayingSo) {
  const std::string path = Write("big", std::string(65, 'x'));
  const Result<std::string> text = ReadBounded(path, 64, InputKind::kRegular, "configuration");
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, Errc::kInvalidArgument);
  EXPECT_NE(text.error().message.find(path), std::string::npos);
  EXPECT_NE(text.error().message.find("larger than 64 B"), std::string::npos)
      << text.error().message;
}

TEST_F(BoundedRead, RefusesDevicesDirectoriesAndSocketsWithoutReading) {
  for (const char* path : {"/dev/zero", "/dev/urandom", "/tmp"}) {
    const Result<std::string> text =
        ReadBounded(path, kMaxConfigBytes, InputKind::kRegularOrPipe, "configuration");
    ASSERT_FALSE(text) << path;
    EXPECT_EQ(text.error().code, Errc::kInvalidArgument);
    EXPECT_NE(text.error().message.find("not a regular file"), std::string::npos)
        << text.error().message;
  }
  const std::string socket_path = (dir_ / "sock").string();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  socket_path.copy(address.sun_path, sizeof address.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  EXPECT_FALSE(ReadBounded(socket_path, 10, InputKind::kRegularOrPipe, "x"));
  ::close(fd);
}

TEST_F(BoundedRead, APipeIsAcceptedOnlyWhereStreamsAre) {
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Refused as a configuration without blocking on a missing writer.
  const Result<std::string> refused = ReadBounded(fifo, 10, InputKind::kRegular, "configuration");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("a pipe"), std::string::npos);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "abc", 3), 3);
  ::close(fds[1]);
  const Result<std::string> text = ReadBounded(fds[0], "pipe", 10, "input");
  ::close(fds[0]);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "abc");
}

TEST_F(BoundedRead, AnEndlessPipeStopsAtTheCap) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    const std::string chunk(4096, 'y');
    while (::write(fds[1], chunk.data(), chunk.size()) > 0) {
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  const Result<std::string> text = ReadBounded(fds[0], "pipe", 1 << 20, "input");
  ::close(fds[0]);  // the writer gets EPIPE and ends
  ::waitpid(child, nullptr, 0);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, Errc::kInvalidArgument);
}

TEST_F(BoundedRead, MissingAndUnreadableFilesSayWhich) {
  const Result<UniqueFd> missing =
      OpenInput((dir_ / "nope").string(), InputKind::kRegular, "state file");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::kNotFound);
  EXPECT_NE(missing.error().message.find("ENOENT"), std::string::npos);
}

}  // namespace
}  // namespace zcal::common::bounded_read_test
