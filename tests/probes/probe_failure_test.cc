// How a failed probe failed, as a kind (peer_failure.h) and not as words:
// a receiver that resets the connection, one that stops reading, a port
// nobody listens on.
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "zcal/calibrator/method.h"
#include "zcal/common/unique_fd.h"
#include "zcal/probes/send/capabilities.h"
#include "zcal/probes/send/connect.h"
#include "zcal/probes/send/probe_runner.h"
#include "zcal/probes/types/target.h"

namespace zcal::probes::probe_failure_test {
namespace {

using namespace std::chrono_literals;
using calibrator::Method;
using calibrator::SampleStatus;

enum class Receiver { kResets, kStopsReading };

// A TCP listener on 127.0.0.1 that accepts one connection and then resets
// it once a byte arrived, or holds it open without reading a byte until destroyed.
class BadReceiver {
 public:
  explicit BadReceiver(Receiver behaviour) {
    listener_ = common::UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    // The smallest receive buffer (set before listen(2), so that accepted
    // connections get it): a receiver that stops reading stalls the sender
    // within a few hundred KiB.
    const int small = 4096;
    if (listener_) ::setsockopt(listener_.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    if (!listener_ || ::bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(listener_.get(), 4) != 0 ||
        ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return;
    }
    endpoint_ = *common::FromSocketAddress(reinterpret_cast<sockaddr*>(&address), length);
    thread_ = std::thread([this, behaviour] {
      common::UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!connection) return;
      if (behaviour == Receiver::kResets) {
        // After the first bytes, so that the reset hits the sends and not
        // the connect.
        char byte = 0;
        (void)::recv(connection.get(), &byte, 1, 0);
        const linger reset{1, 0};  // close(2) sends RST, not FIN
        ::setsockopt(connection.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        return;
      }
      held_ = std::move(connection);
    });
  }
  ~BadReceiver() {
    if (thread_.joinable()) thread_.join();
  }
  BadReceiver(const BadReceiver&) = delete;
  BadReceiver& operator=(const BadReceiver&) = delete;

  bool ok() const { return endpoint_.port != 0; }
  const common::HostPort& endpoint() const { return endpoint_; }

 private:
  common::UniqueFd listener_;
  common::UniqueFd held_;
  common::HostPort endpoint_;
  std::thread thread_;
};

class FailedProbe : public ::testing::TestWithParam<Method> {
 protected:
  void SetUp() override {
    const Support support = CheckSupport(GetParam());
    if (!support.supported) GTEST_SKIP() << support.reason;
  }

  ProbeOutcome Probe(const common::HostPort& sink, std::chrono::milliseconds duration) const {
    ProbeOptions options;
    options.method = GetParam();
    options.size_bytes = 65536;
    options.path = "loopback";
    options.sink = sink;
    options.duration = duration;
    return ProbeOn(options, [&sink] { return ConnectTcp(sink); });
  }
};

TEST_P(FailedProbe, AReceiverThatResetsIsVanished) {
  BadReceiver receiver(Receiver::kResets);
  ASSERT_TRUE(receiver.ok());
  const ProbeOutcome outcome = Probe(receiver.endpoint(), 1000ms);
  ASSERT_EQ(outcome.sample.status, SampleStatus::kFailed) << outcome.sample.error;
  EXPECT_EQ(outcome.failure, PeerFailure::kVanished)
      << (outcome.failure ? PeerFailureName(*outcome.failure) : "none") << ": "
      << outcome.sample.error;
}

// Longer than the senders' stall limit (kDrainTimeout + kWaitSlice, 1.2 s),
// so that the copying senders give up on the stall before the probe's end;
// the io_uring ones give up 1 s after it.
TEST_P(FailedProbe, AReceiverThatStopsReadingIsATimeout) {
  BadReceiver receiver(Receiver::kStopsReading);
  ASSERT_TRUE(receiver.ok());
  const ProbeOutcome outcome = Probe(receiver.endpoint(), 2500ms);
  ASSERT_EQ(outcome.sample.status, SampleStatus::kFailed) << outcome.sample.error;
  EXPECT_EQ(outcome.failure, PeerFailure::kTimeout)
      << (outcome.failure ? PeerFailureName(*outcome.failure) : "none") << ": "
      << outcome.sample.error;
}

TEST_P(FailedProbe, NobodyListeningIsUnreachable) {
  common::HostPort closed;
  {
    BadReceiver gone(Receiver::kResets);
    ASSERT_TRUE(gone.ok());
    closed = gone.endpoint();
    // Its one accept and read end when a connection sends: give it one.
    auto fd = ConnectTcp(closed);
    if (fd) (void)::send(fd->get(), "x", 1, MSG_NOSIGNAL);
  }
  const ProbeOutcome outcome = Probe(closed, 100ms);
  ASSERT_EQ(outcome.sample.status, SampleStatus::kFailed) << outcome.sample.error;
  EXPECT_EQ(outcome.failure, PeerFailure::kUnreachable)
      << (outcome.failure ? PeerFailureName(*outcome.failure) : "none") << ": "
      << outcome.sample.error;
  EXPECT_NE(outcome.sample.error.find("ECONNREFUSED"), std::string::npos) << outcome.sample.error;
}

INSTANTIATE_TEST_SUITE_P(Methods, FailedProbe,
                         ::testing::Values(Method::kCopy, Method::kMsgZerocopy, Method::kUringSend,
                                           Method::kUringSendZc, Method::kUringSendZcFixed),
                         [](const ::testing::TestParamInfo<Method>& info) {
                           return std::string(calibrator::MethodName(info.param));
                         });

}  // namespace
}  // namespace zcal::probes::probe_failure_test
