// Is a sink ever the bottleneck of what it measures? The same sender
// (zcal's own probe, one method and size) into the two sinks and into
// reference receivers, interleaved round by round in one run on loopback:
//   peer     the PeerSink behind a real session (handshake, token)
//   loop     the loopback Sink, as a calibration of the loopback path uses
//            it (its own default buffer); loop_lowat is the lowat reference
//            with that buffer: the same socket options, no sink around it;
//            epoll_old the data path the loopback sink had before it shared
//            the peer sink's (non-blocking reads, up to 16 per wakeup)
//   recv     a reference: one thread, a tight blocking recv(2) loop
//   lowat    the same with the sinks' socket options (SO_RCVLOWAT at half
//            the buffer, a 5 ms SO_RCVTIMEO): woken once per half buffer, not per segment (on
//            loopback every wakeup also costs the sending thread, which
//            runs the receive path), so that the sink is judged against a
//            reference that batches its wakeups as it does
//   uring    a reference: io_uring recv, several buffers in flight
// Prints GB/s of each, each sink's ratio to its references round by round
// (target >= 0.95) beside a control (the recv reference run twice in a
// round: how far two identical receivers land apart here), the
// receivers' CPU per byte (the process's CPU less the sender's thread),
// and then the handshake's cost per session (target <= 5 ms).
//
//   sink_throughput [SIZE_BYTES] [SECONDS_PER_RUN] [ROUNDS] [METHOD] [LOOP_READ_BYTES]
// (LOOP_READ_BYTES: the loopback sink's read buffer, its default otherwise)
#include <liburing.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "zcal/calibrator/method.h"
#include "zcal/probes/peer/peer_client.h"
#include "zcal/probes/peer/peer_sink.h"
#include "zcal/probes/send/connect.h"
#include "zcal/probes/send/probe_runner.h"
#include "zcal/probes/sink/sink.h"
#include "zcal/probes/types/target.h"

namespace {

using namespace std::chrono_literals;
using zcal::probes::ProbeOptions;

std::uint64_t ProcessCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(t.tv_nsec);
}

struct Run {
  double gbps = 0;
  double receiver_ns_per_byte = 0;
};

template <typename Connect>
Run Measure(const ProbeOptions& probe, Connect&& connect) {
  const std::uint64_t cpu_before = ProcessCpuNs();
  const auto sample = zcal::probes::RunProbeOn(probe, connect);
  const std::uint64_t cpu_after = ProcessCpuNs();
  if (!sample.ok() || sample.bytes == 0) {
    std::fprintf(stderr, "sink_throughput: probe failed: %s\n", sample.error.c_str());
    std::exit(1);
  }
  Run run;
  run.gbps = static_cast<double>(sample.bytes) / static_cast<double>(sample.wall_ns);
  const double receiver_ns = static_cast<double>(cpu_after - cpu_before) -
                             static_cast<double>(sample.cpu_ns);
  run.receiver_ns_per_byte = std::max(0.0, receiver_ns) / static_cast<double>(sample.bytes);
  return run;
}

// A listening socket on 127.0.0.1, any port.
int Listen(std::uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 4) != 0) {
    std::perror("sink_throughput: listen");
    std::exit(1);
  }
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

// Accepts one connection and drains it with recv(2) until EOF. With
// `sink_options` the socket gets the options the sinks' data path sets
// (SO_RCVLOWAT at half the buffer, a 5 ms SO_RCVTIMEO), so that a sink is
// judged against a loop that differs from it only in what a sink adds.
void RecvReceiver(int listen_fd, std::size_t buffer_bytes, bool sink_options) {
  const int fd = ::accept(listen_fd, nullptr, nullptr);
  if (sink_options) {
    const int bytes = static_cast<int>(buffer_bytes / 2);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes);
    const timeval wait{0, 5000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  }
  std::vector<char> buffer(buffer_bytes);
  for (;;) {
    const ssize_t got = ::recv(fd, buffer.data(), buffer.size(), 0);
    if (got > 0) continue;
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    break;
  }
  ::close(fd);
}

// Accepts one connection and drains it as the loopback sink once did: a
// non-blocking socket in epoll, at most 16 reads per wakeup until EAGAIN.
// The pattern the shared data path replaced, kept as a yardstick.
void EpollReceiver(int listen_fd, std::size_t buffer_bytes) {
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK);
  const int epoll_fd = ::epoll_create1(0);
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP;
  event.data.fd = fd;
  ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event);
  std::vector<char> buffer(buffer_bytes);
  for (bool open = true; open;) {
    epoll_event ready{};
    if (::epoll_wait(epoll_fd, &ready, 1, 200) < 0 && errno != EINTR) break;
    for (int k = 0; k < 16; ++k) {
      const ssize_t got = ::recv(fd, buffer.data(), buffer.size(), 0);
      if (got > 0) continue;
      if (got < 0 && errno == EINTR) continue;
      open = got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      break;
    }
  }
  ::close(epoll_fd);
  ::close(fd);
}

// Accepts one connection and drains it with io_uring recv, `depth` buffers
// in flight.
void UringReceiver(int listen_fd, std::size_t buffer_bytes, unsigned depth) {
  const int fd = ::accept(listen_fd, nullptr, nullptr);
  io_uring ring{};
  io_uring_queue_init(depth * 2, &ring, 0);
  std::vector<std::vector<char>> buffers(depth, std::vector<char>(buffer_bytes));
  // One recv per buffer, in order: completions of one socket arrive in order.
  for (unsigned i = 0; i < depth; ++i) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    io_uring_prep_recv(sqe, fd, buffers[i].data(), buffer_bytes, 0);
    io_uring_sqe_set_data64(sqe, i);
  }
  io_uring_submit(&ring);
  bool done = false;
  unsigned outstanding = depth;
  while (outstanding > 0) {
    io_uring_cqe* cqe = nullptr;
    if (io_uring_wait_cqe(&ring, &cqe) != 0) break;
    const int res = cqe->res;
    const auto i = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
    io_uring_cqe_seen(&ring, cqe);
    --outstanding;
    if (res <= 0) done = true;
    if (!done) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      io_uring_prep_recv(sqe, fd, buffers[i].data(), buffer_bytes, 0);
      io_uring_sqe_set_data64(sqe, i);
      io_uring_submit(&ring);
      ++outstanding;
    }
  }
  io_uring_queue_exit(&ring);
  ::close(fd);
}

Run MeasureSink(zcal::probes::PeerSink& sink, const ProbeOptions& probe, double seconds) {
  zcal::probes::PeerSessionRequest request;
  request.duration = std::chrono::milliseconds(static_cast<long>(seconds * 1000) + 5000);
  auto session = zcal::probes::PeerSession::Open(sink.endpoint(), std::nullopt, request, 2s);
  if (!session) {
    std::fprintf(stderr, "sink_throughput: %s\n", session.error().message.c_str());
    std::exit(1);
  }
  const Run run = Measure(probe, [&] { return session->OpenData(2s); });
  session->Close();
  sink.WaitFor([](const zcal::probes::PeerSinkStats& st) { return st.sessions_open == 0; }, 5s);
  return run;
}

// The loopback sink (sink.h), started for the run as a calibration of the
// loopback path starts one: on equal footing with the references, whose
// receiving threads are new for each run too. (On a loaded machine a
// thread that has been running for minutes is scheduled less favourably
// than a new one: a sink kept across the whole benchmark measured 0.79-0.88
// of loop_lowat where a fresh one measured 0.95, in the same hour.)
Run MeasureLoopbackSink(const zcal::probes::SinkOptions& options, const ProbeOptions& probe) {
  auto sink = zcal::probes::Sink::Start(options);
  if (!sink) {
    std::fprintf(stderr, "sink_throughput: %s\n", sink.error().message.c_str());
    std::exit(1);
  }
  const Run run = Measure(probe, [&] { return zcal::probes::ConnectTcp((*sink)->endpoint()); });
  (*sink)->WaitIdle(1, 5s);
  return run;
}

enum class Reference { kRecv, kLowWater, kUring, kEpoll };

Run MeasureReference(const ProbeOptions& probe, std::size_t buffer_bytes, Reference kind) {
  std::uint16_t port = 0;
  const int listen_fd = Listen(port);
  const zcal::common::HostPort target{*zcal::common::ParseIpAddress("127.0.0.1"), port};
  std::thread receiver =
      kind == Reference::kUring   ? std::thread(UringReceiver, listen_fd, buffer_bytes / 4, 4U)
      : kind == Reference::kEpoll ? std::thread(EpollReceiver, listen_fd, buffer_bytes)
                                  : std::thread(RecvReceiver, listen_fd, buffer_bytes,
                                                kind == Reference::kLowWater);
  const Run run = Measure(probe, [&] { return zcal::probes::ConnectTcp(target); });
  receiver.join();
  ::close(listen_fd);
  return run;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t size = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 65536;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 1.0;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  const auto method = zcal::calibrator::ParseMethod(argc > 4 ? argv[4] : "uring_send");
  if (!method || size == 0 || seconds <= 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: sink_throughput [SIZE_BYTES] [SECONDS] [ROUNDS] [METHOD] "
                         "[LOOP_READ_BYTES]\n");
    return 2;
  }
  zcal::probes::PeerSinkOptions options;  // 127.0.0.1, any port, auth none
  options.auth_none = true;
  options.max_session_seconds = std::chrono::seconds(600);
  auto sink = zcal::probes::PeerSink::Start(options);
  if (!sink) {
    std::fprintf(stderr, "sink_throughput: %s\n", sink.error().message.c_str());
    return 1;
  }
  ProbeOptions probe;
  probe.method = *method;
  probe.size_bytes = size;
  probe.duration = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(seconds));

  zcal::probes::SinkOptions loopback_options;  // 127.0.0.1, the defaults a calibration uses
  if (argc > 5) loopback_options.read_bytes = std::strtoull(argv[5], nullptr, 10);
  const std::size_t loopback_buffer = loopback_options.read_bytes;

  // The receivers of one round; the sinks' references use each sink's own
  // buffer size. `recv2` runs the recv reference a second time in the same
  // round: how far two identical receivers land apart on this machine.
  enum Receiver { kPeer, kRecv, kLowat, kUring, kRecv2, kLoop, kLoopLowat, kEpollOld, kReceivers };
  const char* const names[kReceivers] = {"peer", "recv", "lowat", "uring", "recv2", "loop",
                                         "loop_lowat", "epoll_old"};
  std::vector<double> gbps[kReceivers], cpu[kReceivers];
  std::vector<double> vs_recv, vs_lowat, vs_uring, control, ratios, loop_vs_lowat, loop_vs_recv,
      old_vs_lowat;
  std::printf("(%s, %llu B, %.1f s each; peer = PeerSink behind a session, loop = the "
              "loopback Sink; lowat/loop_lowat = recv loops with each sink's socket options)\n",
              std::string(zcal::calibrator::MethodName(*method)).c_str(),
              static_cast<unsigned long long>(size), seconds);
  std::printf("round");
  for (const char* name : names) std::printf("  %10s", name);
  std::printf("  peer/best  loop/lowat  (GB/s)\n");
  for (int round = 0; round < rounds; ++round) {
    // In a rotating order, so that none always runs first (after a pause)
    // or last.
    Run run[kReceivers];
    for (int k = 0; k < kReceivers; ++k) {
      switch ((round + k) % kReceivers) {
        case kPeer: run[kPeer] = MeasureSink(**sink, probe, seconds); break;
        case kRecv: run[kRecv] = MeasureReference(probe, options.read_bytes, Reference::kRecv); break;
        case kLowat: run[kLowat] = MeasureReference(probe, options.read_bytes, Reference::kLowWater); break;
        case kUring: run[kUring] = MeasureReference(probe, options.read_bytes, Reference::kUring); break;
        case kRecv2: run[kRecv2] = MeasureReference(probe, options.read_bytes, Reference::kRecv); break;
        case kLoop: run[kLoop] = MeasureLoopbackSink(loopback_options, probe); break;
        case kLoopLowat:
          run[kLoopLowat] = MeasureReference(probe, loopback_buffer, Reference::kLowWater);
          break;
        case kEpollOld:
          run[kEpollOld] = MeasureReference(probe, loopback_buffer, Reference::kEpoll);
          break;
      }
    }
    // Ratios within one round: the receivers ran within seconds of each
    // other, so a shared machine's slower minutes move all of them alike.
    vs_recv.push_back(run[kPeer].gbps / run[kRecv].gbps);
    vs_lowat.push_back(run[kPeer].gbps / run[kLowat].gbps);
    vs_uring.push_back(run[kPeer].gbps / run[kUring].gbps);
    control.push_back(run[kRecv2].gbps / run[kRecv].gbps);
    loop_vs_lowat.push_back(run[kLoop].gbps / run[kLoopLowat].gbps);
    loop_vs_recv.push_back(run[kLoop].gbps / run[kRecv].gbps);
    old_vs_lowat.push_back(run[kEpollOld].gbps / run[kLoopLowat].gbps);
    const double ratio =
        run[kPeer].gbps / std::max({run[kRecv].gbps, run[kLowat].gbps, run[kUring].gbps});
    ratios.push_back(ratio);
    std::printf("%5d", round + 1);
    for (int k = 0; k < kReceivers; ++k) {
      std::printf("  %10.2f", run[k].gbps);
      gbps[k].push_back(run[k].gbps);
      cpu[k].push_back(run[k].receiver_ns_per_byte);
    }
    std::printf("  %9.3f  %10.3f\n", ratio, loop_vs_lowat.back());
  }
  std::printf("median GB/s:");
  for (int k = 0; k < kReceivers; ++k) std::printf(" %s %.2f", names[k], Median(gbps[k]));
  std::printf("\n");
  std::sort(ratios.begin(), ratios.end());
  std::printf("per round, peer sink / best reference of that round: median %.3f, min %.3f, "
              "max %.3f (biased low: the best of three noisy figures)\n",
              Median(ratios), ratios.front(), ratios.back());
  std::printf("per round, pairwise medians (target >= 0.95): peer/recv %.3f, peer/lowat %.3f, "
              "peer/uring %.3f; loop/loop_lowat %.3f (min %.3f), loop/recv %.3f; control "
              "recv2/recv %.3f (spread %.3f to %.3f)\n",
              Median(vs_recv), Median(vs_lowat), Median(vs_uring), Median(loop_vs_lowat),
              *std::min_element(loop_vs_lowat.begin(), loop_vs_lowat.end()),
              Median(loop_vs_recv), Median(control),
              *std::min_element(control.begin(), control.end()),
              *std::max_element(control.begin(), control.end()));
  std::printf("the loopback sink's former data path (epoll, non-blocking reads) / loop_lowat: "
              "median %.3f\n",
              Median(old_vs_lowat));
  std::printf("receiver CPU per byte (process less the sender's thread), ns/B:");
  for (int k = 0; k < kReceivers; ++k) std::printf(" %s %.3f", names[k], Median(cpu[k]));
  std::printf("\n");

  // The handshake: a keyed sink, sessions opened and closed one after the other.
  zcal::probes::PeerSinkOptions keyed;
  zcal::probes::peer::KeyRing ring;
  ring.keys.push_back({"bench", std::vector<std::uint8_t>(32, 0x42)});
  keyed.keys = ring;
  auto keyed_sink = zcal::probes::PeerSink::Start(keyed);
  if (!keyed_sink) return 1;
  std::vector<double> open_ms;
  for (int i = 0; i < 200; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto session = zcal::probes::PeerSession::Open((*keyed_sink)->endpoint(), ring.keys.front(),
                                                   {}, 2s);
    const auto end = std::chrono::steady_clock::now();
    if (!session) {
      std::fprintf(stderr, "sink_throughput: handshake %d: %s\n", i, session.error().message.c_str());
      return 1;
    }
    open_ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
    session->Close();
    (*keyed_sink)->WaitFor([&](const zcal::probes::PeerSinkStats& st) { return st.sessions_open == 0; }, 5s);
  }
  std::sort(open_ms.begin(), open_ms.end());
  std::printf("handshake (connect, greeting, hello, answer; HMAC-SHA256): median %.3f ms, "
              "p99 %.3f ms over %zu sessions (target <= 5 ms)\n",
              open_ms[open_ms.size() / 2], open_ms[open_ms.size() * 99 / 100], open_ms.size());
  return 0;
}
