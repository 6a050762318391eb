// Builds segment images byte by byte, independently of the agent's writer,
// so that reader tests can state exactly what lies in shared memory.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "zcal/zcal.h"

namespace zcal::test {

inline std::uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

/// A segment name no other test process uses; removed on destruction.
class ScopedName {
 public:
  explicit ScopedName(const std::string& tag) {
    static std::atomic<int> counter{0};
    name_ = "/zcal-test-" + tag + "-" + std::to_string(getpid()) + "-" +
            std::to_string(counter++);
    shm_unlink(name_.c_str());
  }
  ScopedName(const ScopedName&) = delete;
  ScopedName& operator=(const ScopedName&) = delete;
  ~ScopedName() { shm_unlink(name_.c_str()); }
  const std::string& str() const { return name_; }
  const char* c_str() const { return name_.c_str(); }
  std::string path() const { return "/dev/shm" + name_; }

 private:
  std::string name_;
};

inline zcal_shm_entry MakeEntry(std::uint8_t scope, std::uint8_t method,
                                std::uint8_t verdict,
                                std::optional<std::uint64_t> threshold) {
  zcal_shm_entry e{};
  e.scope = scope;
  e.method = method;
  e.verdict = verdict;
  if (threshold) {
    e.entry_flags = ZCAL_ENTRY_HAS_THRESHOLD;
    e.threshold_bytes = *threshold;
  }
  e.confidence_ppm = ZCAL_CONFIDENCE_UNKNOWN;
  e.measured_at_ns = NowNs();
  return e;
}

inline zcal_shm_entry Peer(const char* address, std::uint8_t prefix_len,
                           std::uint8_t method, std::uint64_t threshold) {
  zcal_shm_entry e = MakeEntry(ZCAL_SCOPE_PEER, method, ZCAL_VERDICT_THRESHOLD, threshold);
  if (inet_pton(AF_INET, address, e.address) == 1) {
    e.family = ZCAL_FAMILY_IPV4;
  } else if (inet_pton(AF_INET6, address, e.address) == 1) {
    e.family = ZCAL_FAMILY_IPV6;
  } else {
    throw std::invalid_argument(address);
  }
  e.prefix_len = prefix_len;
  return e;
}

inline zcal_shm_entry Interface(const char* name, std::uint8_t method,
                                std::uint64_t threshold) {
  zcal_shm_entry e =
      MakeEntry(ZCAL_SCOPE_INTERFACE, method, ZCAL_VERDICT_THRESHOLD, threshold);
  std::strncpy(e.interface, name, sizeof e.interface - 1);
  return e;
}

/// A valid, empty segment of `capacity` entries, 8-byte aligned.
class SegmentImage {
 public:
  explicit SegmentImage(std::uint32_t capacity)
      : bytes_(sizeof(zcal_shm_header) + capacity * sizeof(zcal_shm_entry)) {
    zcal_shm_header& h = header();
    h.magic = ZCAL_MAGIC;
    h.abi_major = ZCAL_ABI_MAJOR;
    h.abi_minor = ZCAL_ABI_MINOR;
    h.header_size = sizeof(zcal_shm_header);
    h.entry_size = sizeof(zcal_shm_entry);
    h.capacity = capacity;
    h.generation = 1000;
    h.publish_time_ns = NowNs();
    h.heartbeat_ns = NowNs();
    h.created_ns = NowNs();
    h.agent_pid = 4242;
  }
  zcal_shm_header& header() {
    return *std::launder(reinterpret_cast<zcal_shm_header*>(bytes_.data()));
  }
  zcal_shm_entry& entry(std::uint32_t i) {
    return std::launder(reinterpret_cast<zcal_shm_entry*>(bytes_.data() + sizeof(zcal_shm_header)))[i];
  }
  void Add(const zcal_shm_entry& e) { entry(header().count++) = e; }
  void* data() { return bytes_.data(); }
  std::size_t size() const { return size_override_ ? *size_override_ : bytes_.size(); }
  /// Claims fewer bytes than the header needs (a truncated segment).
  void Truncate(std::size_t bytes) { size_override_ = bytes; }

  /// Writes the image to /dev/shm as segment `name`, mode 0600.
  void WriteTo(const ScopedName& name) { WriteBytes(name, data(), size()); }

  static void WriteBytes(const ScopedName& name, const void* bytes, std::size_t n) {
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) throw std::runtime_error("shm_open " + name.str());
    const char* p = static_cast<const char*>(bytes);
    std::size_t done = 0;
    while (done < n) {
      ssize_t w = write(fd, p + done, n - done);
      if (w <= 0) throw std::runtime_error("write " + name.str());
      done += static_cast<std::size_t>(w);
    }
    close(fd);
  }

 private:
  // Bytes from the allocator, where the header and entries begin their
  // lifetime implicitly: typed access to a vector of uint64_t words was
  // undefined (strict aliasing), and clang -O3 dropped the header stores.
  // operator new aligns to 16 bytes, more than the 8 the reader needs.
  std::vector<std::byte> bytes_;
  std::optional<std::size_t> size_override_;
};

}  // namespace zcal::test
