// The agent's peer sink across reloads: a replace that cannot go through
// leaves the sink serving that was there.
#include "served_sink.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "test_util.h"
#include "zcal/agent/config/sink_settings.h"
#include "zcal/probes/peer/peer_keys.h"

namespace zcal::agent::served_sink_test {
namespace {

using testing::FreePort;
using testing::TempDir;
using testing::WriteFile;

bool Contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

// Whether a TCP connection to 127.0.0.1:port is accepted.
bool Accepts(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0;
  close(fd);
  return ok;
}

// A listening socket that holds 127.0.0.1:port.
class Holder {
 public:
  explicit Holder(int port) : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(static_cast<std::uint16_t>(port));
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<const sockaddr*>(&at), sizeof at), 0);
    EXPECT_EQ(listen(fd_, 4), 0);
  }
  ~Holder() { close(fd_); }

 private:
  int fd_;
};

class ServedSinkTest : public ::testing::Test {
 protected:
  ServedSinkTest() {
    const Result<std::string> line = probes::peer::NewKeyLine("test");
    EXPECT_TRUE(line);
    WriteFile(key_, *line + "\n");
    chmod(key_.c_str(), 0600);
  }
  // The configuration of a sink on 127.0.0.1:port, as ParseConfig makes it.
  SinkConfig On(int port, std::uint64_t max_sessions = 1) {
    SinkSettings settings;
    settings.listen = "127.0.0.1:" + std::to_string(port);
    settings.key_file = key_.string();
    settings.max_sessions = max_sessions;
    std::vector<std::string> warnings;
    auto options = ToPeerSinkOptions(settings, SettingSpelling::kConfig, warnings);
    EXPECT_TRUE(options) << options.error().message;
    SinkConfig config;
    config.options = *options;
    config.key_file = key_.string();
    return config;
  }
  TempDir dir_;
  std::filesystem::path key_ = dir_.path() / "sink.key";
  int port_ = FreePort();
  std::shared_ptr<Metrics> metrics_ = std::make_shared<Metrics>("test");
};

TEST_F(ServedSinkTest, AReplaceOntoAnAddressInUseKeepsTheOldSinkServing) {
  ServedSink sink(metrics_);
  const SinkConfig current = On(port_);
  ASSERT_TRUE(sink.Start(current, false));
  ASSERT_TRUE(Accepts(port_));
  const int taken = FreePort();
  Holder holder(taken);
  const Result<bool> replaced = sink.Replace(current, On(taken), false);
  ASSERT_FALSE(replaced);
  EXPECT_NE(replaced.error().message.find("sink.listen 127.0.0.1:" + std::to_string(taken)),
            std::string::npos)
      << replaced.error().message;
  EXPECT_TRUE(Accepts(port_)) << "the old sink still serves its address";
  EXPECT_TRUE(Contains(metrics_->Text(), "zcal_sink_")) << metrics_->Text();
  sink.Stop();
}

TEST_F(ServedSinkTest, AReplaceOnTheSameAddressMovesToTheNewSettings) {
  ServedSink sink(metrics_);
  const SinkConfig current = On(port_);
  ASSERT_TRUE(sink.Start(current, false));
  const SinkConfig next = On(port_, 2);
  const Result<bool> replaced = sink.Replace(current, next, false);
  ASSERT_TRUE(replaced) << replaced.error().message;
  EXPECT_TRUE(*replaced);
  EXPECT_TRUE(Accepts(port_));
  const Result<bool> again = sink.Replace(next, On(port_, 2), false);
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again) << "the same options and keys: nothing to replace";
  sink.Stop();
}

TEST_F(ServedSinkTest, ARotatedKeyFileReplacesTheSink) {
  ServedSink sink(metrics_);
  const SinkConfig current = On(port_);
  ASSERT_TRUE(sink.Start(current, false));
  const Result<std::string> line = probes::peer::NewKeyLine("rotated");
  ASSERT_TRUE(line);
  WriteFile(key_, *line + "\n");
  const Result<bool> replaced = sink.Replace(current, On(port_), false);
  ASSERT_TRUE(replaced) << replaced.error().message;
  EXPECT_TRUE(*replaced);
  EXPECT_TRUE(Accepts(port_));
  sink.Stop();
}

}  // namespace
}  // namespace zcal::agent::served_sink_test
