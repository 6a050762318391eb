// libFuzzer target over the bytes of a segment: whatever lies in shared
// memory, the reader answers with a documented error or a result, and
// never reads out of bounds. Inputs go through an in-memory handle (fast:
// validation, copy, index, lookups, changes after open) and through a real
// /dev/shm file (fstat, mmap, size checks).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "handle.h"
#include "zcal/zcal.h"

namespace {

void Check(int rc) {
  if (rc != 0 && rc != -EPROTO && rc != -EAGAIN && rc != -ENODATA && rc != -ENOENT)
    std::abort();
}

void Exercise(zcal_handle* h, const std::uint8_t* data, std::size_t size) {
  zcal_info info;
  Check(zcal_read_info(h, &info));
  zcal_shm_entry entry;
  for (std::uint32_t i = 0; i < info.count && i < 64; ++i) zcal_read_entry(h, i, &entry);
  const char* addresses[] = {"10.0.0.1", "127.0.0.1", "::1", "2001:db8::1", "0.0.0.0"};
  for (const char* address : addresses) {
    zcal_key key;
    zcal_key_from_string(address, "eth0", &key);
    for (std::uint8_t method = 0; method < 6; ++method) {
      zcal_result r;
      Check(zcal_lookup(h, &key, method, &r));
      zcal_should_zerocopy(h, &key, method, 65536, 1000000000u, 1);
      for (const std::uint32_t depth : {0u, 1u, 4u, 16u, 100u}) {
        Check(zcal_lookup_depth(h, &key, method, depth, &r));
      }
    }
  }
  // Keys from the input itself reach arbitrary prefixes.
  if (size >= 17) {
    zcal_key key{};
    key.family = (data[size - 17] & 1) ? ZCAL_FAMILY_IPV6 : ZCAL_FAMILY_IPV4;
    std::memcpy(key.address, data + size - 16, 16);
    zcal_result r;
    Check(zcal_lookup(h, &key, data[0], &r));
    Check(zcal_lookup_depth(h, &key, data[0], data[1], &r));
    // A guard over the same table: per-send answers and completions.
    zcal_guard guard;
    zcal_guard_init_key(&guard, sizeof guard, h, &key, data[0], data[2] & 1, 0);
    for (std::size_t i = 0; i < 64 && i < size; ++i) {
      zcal_guard_should_zerocopy(&guard, std::uint64_t{data[i]} << 10);
      if (data[i] & 1) zcal_guard_completed(&guard, data[i] >> 4, (data[i] >> 1) & 1);
    }
  }
}

void ThroughMemory(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint64_t> words(size / 8 + 1);
  std::memcpy(words.data(), data, size);
  zcal_handle* h = nullptr;
  const int rc = zcal_internal_attach(words.data(), size, &h);
  Check(rc);
  if (rc != 0) return;
  Exercise(h, data, size);
  // A writer changes the table after open: every byte may change, then a
  // new generation makes the reader copy again.
  auto* bytes = reinterpret_cast<std::uint8_t*>(words.data());
  for (std::size_t i = 0; i + 1 < size && i < 64; i += 2) bytes[data[i] % size] ^= data[i + 1];
  if (size >= sizeof(zcal_shm_header)) {
    auto* hdr = reinterpret_cast<zcal_shm_header*>(words.data());
    hdr->generation += 1;
    hdr->seq &= ~std::uint64_t{1};
  }
  Exercise(h, data, size);
  zcal_close(h);
}

void ThroughFile(const std::uint8_t* data, std::size_t size) {
  static const std::string name = "/zcal-fuzz-" + std::to_string(getpid());
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return;
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  close(fd);
  zcal_handle* h = nullptr;
  const int rc = zcal_open(name.c_str(), &h);
  Check(rc);
  if (rc == 0) {
    Exercise(h, data, size);
    zcal_close(h);
  }
  shm_unlink(name.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > (1u << 20)) return 0;
  ThroughMemory(data, size);
  ThroughFile(data, size);
  return 0;
}
