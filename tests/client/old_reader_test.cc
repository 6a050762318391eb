// A reader built before depth classes (ABI minor 1; old_reader/README.md)
// reads a segment that the current writer made with several depth classes
// and gets the stream answer of every scope, as it did before; the current
// reader gets each class's.
//
//   client_old_reader_test OLD_READER
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "zcal/agent/publish/shm_writer.h"
#include "zcal/zcal.h"

namespace {

using zcal::agent::DepthClass;
using zcal::agent::PublishedEntry;
using zcal::agent::ScopeKind;
namespace cal = zcal::calibrator;

std::string old_reader;  // argv[1]

PublishedEntry Entry(ScopeKind scope, cal::Method method, DepthClass depth,
                     cal::Verdict verdict, std::optional<std::uint64_t> threshold) {
  PublishedEntry e;
  e.scope = scope;
  e.method = method;
  e.depth = depth;
  e.verdict = verdict;
  e.threshold_bytes = threshold;
  e.confidence = 0.9;
  e.measured_at_ns = 1;
  return e;
}

PublishedEntry At(PublishedEntry e, const char* address, std::uint8_t prefix_len) {
  e.address = address;
  e.prefix_len = prefix_len;
  return e;
}

PublishedEntry Through(PublishedEntry e, const char* interface) {
  e.interface = interface;
  return e;
}

// Each scope's other classes come before its stream entry here, so that
// only the writer's order can put the stream entry first.
std::vector<PublishedEntry> Table() {
  const auto zc = cal::Method::kMsgZerocopy;
  const auto uring = cal::Method::kUringSendZc;
  const auto threshold = cal::Verdict::kThreshold;
  PublishedEntry loopback_never =
      Entry(ScopeKind::kLoopback, zc, DepthClass::kStream, cal::Verdict::kNever, std::nullopt);
  loopback_never.reason = cal::Reason::kKernelCopied;
  return {
      Entry(ScopeKind::kHostDefault, zc, DepthClass::k1, threshold, 65536),
      Entry(ScopeKind::kHostDefault, zc, DepthClass::k4, threshold, 49152),
      Entry(ScopeKind::kLoopback, zc, DepthClass::k1, cal::Verdict::kAlways, std::nullopt),
      At(Entry(ScopeKind::kPeer, uring, DepthClass::k16, threshold, 40000), "192.0.2.0", 24),
      Through(Entry(ScopeKind::kInterface, zc, DepthClass::k1, threshold, 70000), "eth9"),
      Entry(ScopeKind::kHostDefault, zc, DepthClass::kStream, threshold, 24576),
      Entry(ScopeKind::kHostDefault, zc, DepthClass::k16, threshold, 32768),
      loopback_never,
      At(Entry(ScopeKind::kPeer, uring, DepthClass::kStream, threshold, 20000), "192.0.2.0", 24),
      Through(Entry(ScopeKind::kInterface, zc, DepthClass::kStream, threshold, 30000), "eth9"),
  };
}

class Published {
 public:
  Published() : name_("/zcal-old-reader-" + std::to_string(getpid())) {
    zcal::agent::ShmWriterOptions options;
    options.name = name_;
    options.capacity = 16;
    auto writer = zcal::agent::ShmWriter::Create(options);
    if (!writer) throw std::runtime_error(writer.error().message);
    writer_ = std::move(*writer);
    if (auto ok = writer_->Publish(Table(), false); !ok) {
      throw std::runtime_error(ok.error().message);
    }
  }
  Published(const Published&) = delete;
  Published& operator=(const Published&) = delete;
  ~Published() { shm_unlink(name_.c_str()); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::unique_ptr<zcal::agent::ShmWriter> writer_;
};

// The old reader's answer to each query, one line each.
std::vector<std::string> AskOldReader(const std::string& segment,
                                      const std::vector<std::string>& queries) {
  std::string command = old_reader + " " + segment;
  for (const std::string& q : queries) command += " " + q;
  FILE* out = popen(command.c_str(), "r");
  if (out == nullptr) return {};
  std::vector<std::string> lines;
  char line[256];
  while (std::fgets(line, sizeof line, out) != nullptr) {
    std::string text = line;
    if (!text.empty() && text.back() == '\n') text.pop_back();
    lines.push_back(text);
  }
  EXPECT_EQ(pclose(out), 0) << command;
  return lines;
}

TEST(OldReader, ReadsTheStreamAnswersOfASegmentWithDepthClasses) {
  Published segment;
  const std::vector<std::string> answers = AskOldReader(
      segment.name(), {"198.51.100.1//1", "127.0.0.1//1", "192.0.2.7//3", "/eth9/1"});
  EXPECT_EQ(answers, (std::vector<std::string>{
                         "24576 threshold host_default",
                         "0 never loopback",
                         "20000 threshold peer",
                         "30000 threshold interface",
                     }));
}

TEST(OldReader, CurrentReaderAnswersEachClassOfTheSameSegment) {
  Published segment;
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(segment.name().c_str(), &h), 0) << zcal_error_detail();
  zcal_key key;
  ASSERT_EQ(zcal_key_from_string("198.51.100.1", nullptr, &key), 0);
  const std::vector<std::pair<std::uint32_t, std::uint64_t>> expected = {
      {1, 65536}, {3, 65536}, {4, 49152}, {16, 32768}, {31, 32768}, {32, 24576}};
  for (const auto& [depth, threshold] : expected) {
    zcal_result r;
    ASSERT_EQ(zcal_lookup_depth(h, &key, ZCAL_METHOD_MSG_ZEROCOPY, depth, &r), 0);
    EXPECT_EQ(r.threshold_bytes, threshold) << "depth " << depth;
    EXPECT_EQ(r.depth_fallback, 0) << "depth " << depth;
  }
  zcal_result stream;
  ASSERT_EQ(zcal_lookup(h, &key, ZCAL_METHOD_MSG_ZEROCOPY, &stream), 0);
  EXPECT_EQ(stream.threshold_bytes, 24576u);
  EXPECT_EQ(stream.depth_class, ZCAL_DEPTH_STREAM);
  zcal_close(h);
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OLD_READER\n", argv[0]);
    return 2;
  }
  old_reader = argv[1];
  return RUN_ALL_TESTS();
}
