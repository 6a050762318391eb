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
#include "zcal/probes/peer_keys.h"

namespace zcal::agent {
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

class ServedSinkTest : public ::testing::Test {
 protected:
  ServedSinkTest() {
    const Result<std::string> line = probes::peer::NewKeyLine("test");
    EXPECT_TRUE(line);
    WriteFile(key_, *line + "\n");
    chmod(key_.c_str(), 0600);
    settings_.listen = "127.0.0.1:" + std::to_string(port_);
    settings_.key_file = key_.string();
  }
  TempDir dir_;
  std::filesystem::path key_ = dir_.path() / "sink.key";
  int port_ = FreePort();
  SinkSettings settings_;
  std::shared_ptr<Metrics> metrics_ = std::make_shared<Metrics>("test");
};

TEST_F(ServedSinkTest, AReplaceWhoseKeyFileCannotBeReadKeepsTheOldSinkServing) {
  ServedSink sink(metrics_);
  ASSERT_TRUE(sink.Start(settings_, false));
  ASSERT_TRUE(Accepts(port_));
  WriteFile(key_, "not a key line\n");
  SinkSettings next = settings_;
  next.max_sessions = 2;
  const Result<bool> replaced = sink.Replace(settings_, next, false);
  ASSERT_FALSE(replaced);
  EXPECT_NE(replaced.error().message.find(key_.string()), std::string::npos)
      << replaced.error().message;
  EXPECT_TRUE(Accepts(port_)) << "the old sink still serves its address";
  EXPECT_TRUE(Contains(metrics_->Text(), "zcal_sink_")) << metrics_->Text();
  sink.Stop();
}

TEST_F(ServedSinkTest, AReplaceOnTheSameAddressMovesToTheNewSettings) {
  ServedSink sink(metrics_);
  ASSERT_TRUE(sink.Start(settings_, false));
  SinkSettings next = settings_;
  next.max_sessions = 2;
  const Result<bool> replaced = sink.Replace(settings_, next, false);
  ASSERT_TRUE(replaced) << replaced.error().message;
  EXPECT_TRUE(*replaced);
  EXPECT_TRUE(Accepts(port_));
  const Result<bool> again = sink.Replace(next, next, false);
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again) << "the same settings and keys: nothing to replace";
  sink.Stop();
}

}  // namespace
}  // namespace zcal::agent
