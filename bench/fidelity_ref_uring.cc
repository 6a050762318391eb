// The yardstick for the io_uring probes: a batched IORING_OP_SEND sender
// written the way high-performance io_uring transports write it (several
// SQEs per submit, a registered ring fd, a fixed number of requests in
// flight), independent of the probe code. Prints one JSON line.
//
//   fidelity_ref_uring ADDR:PORT SIZE_BYTES SECONDS [DEPTH] [BATCH]
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::uint64_t ThreadCpuNs() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return static_cast<std::uint64_t>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) *
             1000000000ULL +
         static_cast<std::uint64_t>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1000ULL;
}

int Die(const char* what, int err) {
  std::fprintf(stderr, "fidelity_ref_uring: %s: %s\n", what, std::strerror(err));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: fidelity_ref_uring ADDR:PORT SIZE SECONDS [DEPTH] [BATCH]\n");
    return 2;
  }
  const std::string target = argv[1];
  const auto colon = target.rfind(':');
  const std::size_t size = std::strtoull(argv[2], nullptr, 10);
  const double seconds = std::strtod(argv[3], nullptr);
  const unsigned depth = argc > 4 ? static_cast<unsigned>(std::atoi(argv[4])) : 16;
  const unsigned batch = argc > 5 ? static_cast<unsigned>(std::atoi(argv[5])) : 8;

  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(std::atoi(target.c_str() + colon + 1)));
  if (colon == std::string::npos ||
      inet_pton(AF_INET, target.substr(0, colon).c_str(), &address.sin_addr) != 1) {
    std::fprintf(stderr, "fidelity_ref_uring: bad address %s\n", target.c_str());
    return 2;
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return Die("connect", errno);
  }

  io_uring ring;
  io_uring_params params{};
  params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  if (int rc = io_uring_queue_init_params(depth * 2, &ring, &params); rc < 0) {
    return Die("io_uring_queue_init", -rc);
  }
  io_uring_register_ring_fd(&ring);
  std::vector<char> buffer(size, 'r');

  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(seconds));
  const std::uint64_t cpu_start = ThreadCpuNs();
  std::uint64_t bytes = 0;
  unsigned in_flight = 0;
  bool stopping = false;
  while (!stopping || in_flight > 0) {
    if (!stopping && std::chrono::steady_clock::now() >= end) stopping = true;
    while (!stopping && in_flight < depth) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      if (sqe == nullptr) break;
      io_uring_prep_send(sqe, fd, buffer.data(), size, MSG_WAITALL);
      ++in_flight;
    }
    const unsigned wait = stopping ? 1 : std::min(batch, in_flight);
    if (in_flight == 0) break;
    if (int rc = io_uring_submit_and_wait(&ring, wait); rc < 0 && rc != -EINTR) {
      return Die("io_uring_submit_and_wait", -rc);
    }
    unsigned head = 0, seen = 0;
    io_uring_cqe* cqe = nullptr;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      if (cqe->res < 0) return Die("send", -cqe->res);
      bytes += static_cast<std::uint64_t>(cqe->res);
      --in_flight;
    }
    io_uring_cq_advance(&ring, seen);
  }
  const std::uint64_t cpu_ns = ThreadCpuNs() - cpu_start;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  io_uring_queue_exit(&ring);
  close(fd);
  std::printf("{\"method\":\"ref_uring_send\",\"size\":%zu,\"depth\":%u,\"batch\":%u,"
              "\"bytes\":%llu,\"wall_ns\":%.0f,\"cpu_ns\":%llu,\"mb_per_s\":%.3f,"
              "\"cpu_ns_per_byte\":%.6f}\n",
              size, depth, batch, static_cast<unsigned long long>(bytes), wall * 1e9,
              static_cast<unsigned long long>(cpu_ns), bytes / wall / 1e6,
              bytes ? static_cast<double>(cpu_ns) / static_cast<double>(bytes) : 0.0);
  return 0;
}
