// libFuzzer target over the bytes of a report object: whatever a local
// user puts in /dev/shm/zcal-report-*, the agent's reader refuses it with
// a kind or reads it, and never reads out of bounds. Inputs go through the
// pure functions over memory (fast: header, name, slots) and through a
// real file in a private directory, read twice by an AppsReader (fstat,
// mmap, size checks, the known object's second read, fold and removal).
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "report_object.h"
#include "zcal/agent/apps/apps_reader.h"

namespace {

// A private directory, removed at exit (each input's file is removed
// after it is read).
class PrivateDir {
 public:
  PrivateDir() {
    char path[] = "/tmp/zcal-fuzz-report-XXXXXX";
    if (mkdtemp(path) == nullptr) abort();
    path_ = path;
  }
  ~PrivateDir() { rmdir(path_.c_str()); }
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const std::string& Directory() {
  static const PrivateDir dir;
  return dir.path();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zcal::agent;
  if (size >= 256) {
    // 8-byte aligned, as a mapping is.
    std::vector<std::uint64_t> words((size + 7) / 8);
    std::memcpy(words.data(), data, size);
    const auto* base = reinterpret_cast<const unsigned char*>(words.data());
    const auto header = apps::ReadHeader(base, size);
    if (header) {
      const auto counts = apps::ReadCounts(base, *header, 4);
      if (!counts && counts.error().kind != AppRefusal::kTorn) abort();
    }
  }
  const std::string file = Directory() + "/zcal-report-1";
  const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) abort();
  if (size > 0 && write(fd, data, size) != static_cast<ssize_t>(size)) abort();
  close(fd);
  AppsSettings settings;
  settings.directory = Directory();
  AppsReader reader(settings);
  const AppsRead first = reader.Read(1);
  const AppsRead second = reader.Read(2);
  if (first.stats.opened > 1 || second.stats.opened > 1) abort();
  unlink(file.c_str());
  return 0;
}
