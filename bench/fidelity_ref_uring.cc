// The yardstick for the io_uring probes: a batched io_uring sender written
// the way high-performance io_uring transports write it (several SQEs per
// submit, a registered ring fd, a fixed number of requests in flight, one
// buffer per request), independent of the probe code. Prints one JSON line.
//
//   fidelity_ref_uring ADDR:PORT SIZE_BYTES SECONDS [DEPTH] [BATCH]
//                      [--udp] [--op send|send_zc|send_zc_fixed]
//
// TCP by default; --udp sends connected datagrams (the discard path, run
// inside its namespace by bench/fidelity_discard.py). The zerocopy ops
// reuse a buffer only after its notification CQE, and count the copied
// flag (IORING_NOTIF_USAGE_ZC_COPIED).
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// liburing 2.3 lacks these (the kernel's values, Linux 6.2).
constexpr unsigned kReportUsage = 1U << 3;
constexpr unsigned kUsageCopied = 1U << 31;

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

enum class Op { kSend, kSendZc, kSendZcFixed };

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  bool udp = false;
  Op op = Op::kSend;
  std::string op_name = "send";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--udp") {
      udp = true;
    } else if (arg == "--op" && i + 1 < argc) {
      op_name = argv[++i];
      if (op_name == "send") op = Op::kSend;
      else if (op_name == "send_zc") op = Op::kSendZc;
      else if (op_name == "send_zc_fixed") op = Op::kSendZcFixed;
      else return Die("--op", EINVAL);
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() < 3) {
    std::fprintf(stderr, "usage: fidelity_ref_uring ADDR:PORT SIZE SECONDS [DEPTH] [BATCH] "
                         "[--udp] [--op send|send_zc|send_zc_fixed]\n");
    return 2;
  }
  const std::string target = positional[0];
  const auto colon = target.rfind(':');
  const std::size_t size = std::strtoull(positional[1].c_str(), nullptr, 10);
  const double seconds = std::strtod(positional[2].c_str(), nullptr);
  const unsigned depth =
      positional.size() > 3 ? static_cast<unsigned>(std::atoi(positional[3].c_str())) : 16;
  const unsigned batch =
      positional.size() > 4 ? static_cast<unsigned>(std::atoi(positional[4].c_str())) : 8;
  const bool zerocopy = op != Op::kSend;

  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(std::atoi(target.c_str() + colon + 1)));
  if (colon == std::string::npos ||
      inet_pton(AF_INET, target.substr(0, colon).c_str(), &address.sin_addr) != 1) {
    std::fprintf(stderr, "fidelity_ref_uring: bad address %s\n", target.c_str());
    return 2;
  }
  const int fd = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
  const int one = 1;
  if (!udp) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
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
  // One page-aligned buffer per request in flight, touched before the run.
  const std::size_t stride = (size + 4095) / 4096 * 4096;
  void* region = mmap(nullptr, stride * depth, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (region == MAP_FAILED) return Die("mmap", errno);
  std::memset(region, 'r', stride * depth);
  auto buffer = [&](unsigned slot) { return static_cast<char*>(region) + slot * stride; };
  if (op == Op::kSendZcFixed) {
    std::vector<iovec> iovecs(depth);
    for (unsigned i = 0; i < depth; ++i) iovecs[i] = {buffer(i), size};
    if (int rc = io_uring_register_buffers(&ring, iovecs.data(), depth); rc < 0) {
      return Die("io_uring_register_buffers", -rc);
    }
  }
  std::vector<unsigned> free_slots;
  for (unsigned i = 0; i < depth; ++i) free_slots.push_back(i);

  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(seconds));
  const std::uint64_t cpu_start = ThreadCpuNs();
  std::uint64_t bytes = 0, notifications = 0, copied = 0;
  unsigned in_flight = 0;
  bool stopping = false;
  while (!stopping || in_flight > 0) {
    if (!stopping && std::chrono::steady_clock::now() >= end) stopping = true;
    while (!stopping && !free_slots.empty()) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      if (sqe == nullptr) break;
      const unsigned slot = free_slots.back();
      free_slots.pop_back();
      if (op == Op::kSend) {
        io_uring_prep_send(sqe, fd, buffer(slot), size, MSG_WAITALL);
      } else if (op == Op::kSendZc) {
        io_uring_prep_send_zc(sqe, fd, buffer(slot), size, MSG_WAITALL, kReportUsage);
      } else {
        io_uring_prep_send_zc_fixed(sqe, fd, buffer(slot), size, MSG_WAITALL, kReportUsage,
                                    slot);
      }
      io_uring_sqe_set_data64(sqe, slot);
      ++in_flight;
    }
    if (in_flight == 0) break;
    const unsigned wait = stopping ? 1 : std::min(batch, in_flight);
    if (int rc = io_uring_submit_and_wait(&ring, wait); rc < 0 && rc != -EINTR) {
      return Die("io_uring_submit_and_wait", -rc);
    }
    unsigned head = 0, seen = 0;
    io_uring_cqe* cqe = nullptr;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      const auto slot = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
      bool released = true;
      if (zerocopy && (cqe->flags & IORING_CQE_F_NOTIF) != 0) {
        ++notifications;
        if ((static_cast<unsigned>(cqe->res) & kUsageCopied) != 0) ++copied;
      } else {
        if (cqe->res < 0) return Die("send", -cqe->res);
        bytes += static_cast<std::uint64_t>(cqe->res);
        released = !zerocopy || (cqe->flags & IORING_CQE_F_MORE) == 0;
      }
      if (released) {
        free_slots.push_back(slot);
        --in_flight;
      }
    }
    io_uring_cq_advance(&ring, seen);
  }
  const std::uint64_t cpu_ns = ThreadCpuNs() - cpu_start;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  io_uring_queue_exit(&ring);
  close(fd);
  std::printf("{\"method\":\"ref_uring_%s\",\"size\":%zu,\"depth\":%u,\"batch\":%u,"
              "\"bytes\":%llu,\"wall_ns\":%.0f,\"cpu_ns\":%llu,\"mb_per_s\":%.3f,"
              "\"cpu_ns_per_byte\":%.6f,\"zc_completions\":%llu,\"zc_copied\":%llu}\n",
              op_name.c_str(), size, depth, batch, static_cast<unsigned long long>(bytes),
              wall * 1e9, static_cast<unsigned long long>(cpu_ns), bytes / wall / 1e6,
              bytes ? static_cast<double>(cpu_ns) / static_cast<double>(bytes) : 0.0,
              static_cast<unsigned long long>(notifications),
              static_cast<unsigned long long>(copied));
  return 0;
}
