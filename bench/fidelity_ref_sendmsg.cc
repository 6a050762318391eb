// The yardstick for the copy and msg_zerocopy probes: a tight sendmsg(2)
// loop, written for the bench and independent of the probe code. With
// MSG_ZEROCOPY it rotates through BUFFERS buffers and reads the error queue
// only when the next buffer's send has not completed yet (without blocking
// first, then blocking until it has): the fewest syscalls a correct sender
// can make, since a completion read covers a range of sends. Prints one
// JSON line.
//
//   fidelity_ref_sendmsg ADDR:PORT SIZE_BYTES SECONDS [BUFFERS]
//                        [--udp] [--zerocopy]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
// After <sys/time.h>: it uses struct timespec without including it.
#include <linux/errqueue.h>

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
  std::fprintf(stderr, "fidelity_ref_sendmsg: %s: %s\n", what, std::strerror(err));
  return 1;
}

struct Completions {
  std::uint32_t next_id = 0;  // id of the next successful send
  std::uint32_t done = 0;     // every id below this has completed
  std::uint64_t count = 0;
  std::uint64_t copied = 0;
};

// Reads what the error queue holds; completions of one socket arrive in
// order, as ranges. False on a real error.
bool Reap(int fd, Completions& c) {
  for (;;) {
    char control[128];
    msghdr msg{};
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    }
    for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
      sock_extended_err err;
      std::memcpy(&err, CMSG_DATA(cm), sizeof err);
      if (err.ee_origin != SO_EE_ORIGIN_ZEROCOPY) return false;
      const std::uint32_t n = err.ee_data - err.ee_info + 1;
      c.count += n;
      if (err.ee_code & SO_EE_CODE_ZEROCOPY_COPIED) c.copied += n;
      c.done = err.ee_data + 1;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  bool udp = false, zerocopy = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--udp") udp = true;
    else if (arg == "--zerocopy") zerocopy = true;
    else positional.push_back(arg);
  }
  if (positional.size() < 3) {
    std::fprintf(stderr, "usage: fidelity_ref_sendmsg ADDR:PORT SIZE SECONDS [BUFFERS] "
                         "[--udp] [--zerocopy]\n");
    return 2;
  }
  const std::string target = positional[0];
  const auto colon = target.rfind(':');
  const std::size_t size = std::strtoull(positional[1].c_str(), nullptr, 10);
  const double seconds = std::strtod(positional[2].c_str(), nullptr);
  const unsigned buffers =
      positional.size() > 3 ? static_cast<unsigned>(std::atoi(positional[3].c_str())) : 16;

  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(std::atoi(target.c_str() + colon + 1)));
  if (colon == std::string::npos ||
      inet_pton(AF_INET, target.substr(0, colon).c_str(), &address.sin_addr) != 1) {
    std::fprintf(stderr, "fidelity_ref_sendmsg: bad address %s\n", target.c_str());
    return 2;
  }
  const int fd = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
  const int one = 1;
  if (!udp) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (zerocopy && setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one) != 0) {
    return Die("SO_ZEROCOPY", errno);
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return Die("connect", errno);
  }
  const std::size_t stride = (size + 4095) / 4096 * 4096;
  void* region = mmap(nullptr, stride * buffers, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (region == MAP_FAILED) return Die("mmap", errno);
  std::memset(region, 'r', stride * buffers);
  // The id of the send that last used each buffer (zerocopy), so that a
  // buffer is reused only once that send completed.
  std::vector<std::uint32_t> last_id(buffers, 0);
  std::vector<bool> used(buffers, false);

  Completions c;
  std::uint64_t bytes = 0, enobufs = 0;
  unsigned slot = 0;
  const int flags = zerocopy ? MSG_ZEROCOPY : 0;
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(seconds));
  const std::uint64_t cpu_start = ThreadCpuNs();
  auto owed = [&](unsigned s) {
    return zerocopy && used[s] && static_cast<std::int32_t>(last_id[s] - c.done) >= 0;
  };
  while (std::chrono::steady_clock::now() < end) {
    while (owed(slot)) {
      if (!Reap(fd, c)) return Die("error queue", EIO);
      if (!owed(slot)) break;
      pollfd p{fd, 0, 0};
      poll(&p, 1, 100);
    }
    iovec iov{static_cast<char*>(region) + slot * stride, size};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    const ssize_t n = sendmsg(fd, &msg, flags);
    if (n < 0) {
      if (errno == ENOBUFS && zerocopy) {
        ++enobufs;
        pollfd p{fd, 0, 0};
        poll(&p, 1, 100);
        if (!Reap(fd, c)) return Die("error queue", EIO);
        continue;
      }
      if (errno == EINTR) continue;
      return Die("sendmsg", errno);
    }
    bytes += static_cast<std::uint64_t>(n);
    if (zerocopy) {
      last_id[slot] = c.next_id++;
      used[slot] = true;
    }
    slot = (slot + 1) % buffers;
  }
  while (zerocopy && c.done != c.next_id) {
    if (!Reap(fd, c)) return Die("error queue", EIO);
    if (c.done == c.next_id) break;
    pollfd p{fd, 0, 0};
    if (poll(&p, 1, 1000) == 0) return Die("completions missing", ETIMEDOUT);
  }
  const std::uint64_t cpu_ns = ThreadCpuNs() - cpu_start;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(fd);
  std::printf("{\"method\":\"ref_sendmsg%s\",\"size\":%zu,\"buffers\":%u,"
              "\"bytes\":%llu,\"wall_ns\":%.0f,\"cpu_ns\":%llu,\"mb_per_s\":%.3f,"
              "\"cpu_ns_per_byte\":%.6f,\"zc_completions\":%llu,\"zc_copied\":%llu,"
              "\"enobufs\":%llu}\n",
              zerocopy ? "_zerocopy" : "", size, buffers, static_cast<unsigned long long>(bytes),
              wall * 1e9, static_cast<unsigned long long>(cpu_ns), bytes / wall / 1e6,
              bytes ? static_cast<double>(cpu_ns) / static_cast<double>(bytes) : 0.0,
              static_cast<unsigned long long>(c.count), static_cast<unsigned long long>(c.copied),
              static_cast<unsigned long long>(enobufs));
  return 0;
}
