// grpc_zc - gRPC C++ with the MSG_ZEROCOPY threshold zcal publishes.
//
//   grpc_zc [--segment NAME] [--peer ADDRESS] [--count N] [--size BYTES]
//           [--report APP]
//
// Looks up the msg_zerocopy answer for ADDRESS (default 127.0.0.1) in the
// zcal segment, turns it into gRPC's two channel arguments
//   grpc.experimental.tcp_tx_zerocopy_enabled
//   grpc.experimental.tcp_tx_zerocopy_send_bytes_threshold
// and builds with them a server (ServerBuilder::AddChannelArgument) on
// ADDRESS and a channel (ChannelArguments) to it, in this one process. It
// then sends N echo calls of BYTES each, through the generic API (raw
// method name and grpc::ByteBuffer: no .proto, no generated code), checks
// every reply and prints what it set and what it exchanged.
//
// gRPC reads the arguments only when it creates a TCP endpoint (a channel
// connects, a server accepts): a new threshold needs a new channel or
// server. On Linux it then sets SO_ZEROCOPY on the socket and sends a
// write with MSG_ZEROCOPY when it is larger than the threshold.
//
// With --report APP (or ZCAL_REPORT=APP in the environment), each message
// the client sends is counted for the zcal agent under that name, as the
// threshold answers it (zcal_should_zerocopy_depth at gRPC's depth): gRPC
// decides each write itself and reads its own completions, so the report
// has the sizes, bytes and answers, not the completions.
//
// The answer maps as zcal_result::zerocopy_from_bytes says: a threshold is
// passed as is, `always` is 0, and `never`, `inconclusive`, no entry or no
// segment leave zerocopy disabled (gRPC's default). Exit status 0, 1 when
// it cannot listen, on a failed call or a wrong reply, 2 on bad usage (also
// an ADDRESS that is not numeric).
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "zcal/zcal.hpp"

namespace {

// The spellings of GRPC_ARG_TCP_TX_ZEROCOPY_ENABLED and
// GRPC_ARG_TCP_TX_ZEROCOPY_SEND_BYTES_THRESHOLD (grpc_types.h).
constexpr char kZerocopyEnabled[] = GRPC_ARG_TCP_TX_ZEROCOPY_ENABLED;
constexpr char kZerocopyThreshold[] = GRPC_ARG_TCP_TX_ZEROCOPY_SEND_BYTES_THRESHOLD;
constexpr char kMethod[] = "/zcal.Echo/Echo";
// gRPC keeps at most this many zerocopy sends of a connection pending
// (GRPC_ARG_TCP_TX_ZEROCOPY_MAX_SIMULT_SENDS, 4 by default): the depth at
// which it sends, so the threshold is that class's. Set explicitly below, so
// that the class asked is the one gRPC keeps.
constexpr char kZerocopyMaxSends[] = GRPC_ARG_TCP_TX_ZEROCOPY_MAX_SIMULT_SENDS;
constexpr int kPendingSends = 4;

struct ZerocopyArgs {
  bool enabled = false;
  int threshold = 0;
  std::string why;  // what the lookup said, for the summary line
};

// What the agent published for `peer`, as gRPC's two arguments.
ZerocopyArgs FromZcal(const char* segment_name, const char* peer) {
  ZerocopyArgs args;
  auto segment = zcal::client::Segment::Open(segment_name);
  if (!segment) {
    args.why = "no segment (" + segment.detail() + ")";
    return args;
  }
  const zcal_key key = *zcal::client::MakeKey(peer);  // checked in main
  auto result = segment->LookupDepth(key, zcal::client::Method::kMsgZerocopy, kPendingSends);
  if (!result) {
    args.why = "no answer (" + result.detail() + ")";
    return args;
  }
  // Which class answered: the one of gRPC's depth, or the scope's stream
  // entry where the agent published none of it.
  const std::string depth =
      result->depth_fallback ? ", stream entry (no depth " + std::to_string(kPendingSends) +
                                   " entry)"
                             : std::string(", depth ") + zcal_depth_name(result->depth_class);
  const std::uint64_t from = result->zerocopy_from_bytes;
  if (from == UINT64_MAX) {
    args.why = std::string("verdict ") + zcal_verdict_name(result->verdict) + depth;
    return args;
  }
  args.enabled = true;
  // gRPC takes an int; a larger threshold is as good as never in practice,
  // and INT_MAX keeps it from wrapping to a small one.
  args.threshold = from > INT_MAX ? INT_MAX : static_cast<int>(from);
  args.why = std::string("verdict ") + zcal_verdict_name(result->verdict) + depth;
  return args;
}

// Echoes every message of a call back, then ends it.
class EchoReactor : public grpc::ServerGenericBidiReactor {
 public:
  EchoReactor() { StartRead(&message_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    StartWrite(&message_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
      return;
    }
    StartRead(&message_);
  }
  void OnDone() override { delete this; }

 private:
  grpc::ByteBuffer message_;
};

class EchoService : public grpc::CallbackGenericService {
  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override {
    if (context->method() != kMethod) {
      class Unimplemented : public grpc::ServerGenericBidiReactor {
       public:
        Unimplemented() { Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "")); }
        void OnDone() override { delete this; }
      };
      return new Unimplemented;
    }
    return new EchoReactor;
  }
};

std::vector<unsigned char> Payload(long call, std::size_t size) {
  std::vector<unsigned char> bytes(size);
  for (std::size_t k = 0; k < size; ++k)
    bytes[k] = static_cast<unsigned char>(call * 131 + static_cast<long>(k));
  return bytes;
}

// One echo call, waited for; true when the reply equals the request.
bool EchoOnce(grpc::GenericStub& stub, long call, std::size_t size, std::string* error) {
  const std::vector<unsigned char> bytes = Payload(call, size);
  grpc::Slice slice(bytes.data(), bytes.size());
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer reply;
  grpc::ClientContext context;
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&context, kMethod, grpc::StubOptions(), &request, &reply,
                 [&](grpc::Status s) {
                   std::lock_guard lock(mutex);
                   status = std::move(s);
                   done = true;
                   done_cv.notify_one();
                 });
  {
    std::unique_lock lock(mutex);
    done_cv.wait(lock, [&] { return done; });
  }
  if (!status.ok()) {
    *error = "call " + std::to_string(call) + " failed: " + status.error_message();
    return false;
  }
  std::vector<grpc::Slice> slices;
  if (!reply.Dump(&slices).ok()) {
    *error = "call " + std::to_string(call) + ": reply unreadable";
    return false;
  }
  std::size_t offset = 0;
  for (const grpc::Slice& s : slices) {
    if (offset + s.size() > bytes.size() ||
        std::memcmp(bytes.data() + offset, s.begin(), s.size()) != 0) {
      *error = "call " + std::to_string(call) + ": reply differs from the request";
      return false;
    }
    offset += s.size();
  }
  if (offset != bytes.size()) {
    *error = "call " + std::to_string(call) + ": reply of " + std::to_string(offset) +
             " bytes, request of " + std::to_string(bytes.size());
    return false;
  }
  return true;
}

int Usage() {
  std::fprintf(stderr,
               "usage: grpc_zc [--segment NAME] [--peer ADDRESS] [--count N] [--size BYTES] "
               "[--report APP]\n");
  return 2;
}

}  // namespace

namespace {

struct Options {
  const char* segment = nullptr;
  const char* peer = "127.0.0.1";
  const char* report = nullptr;
  long count = 20;
  unsigned long long size = 256 * 1024;
};

// The command line into `o`; false for one Usage() must answer.
bool ParseOptions(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return false;
    char* end = nullptr;
    if (std::strcmp(argv[i], "--segment") == 0) {
      o.segment = argv[i + 1];
    } else if (std::strcmp(argv[i], "--peer") == 0) {
      o.peer = argv[i + 1];
    } else if (std::strcmp(argv[i], "--report") == 0) {
      o.report = argv[i + 1];
    } else if (std::strcmp(argv[i], "--count") == 0) {
      o.count = std::strtol(argv[i + 1], &end, 10);
      if (*end != '\0' || o.count <= 0) return false;
    } else if (std::strcmp(argv[i], "--size") == 0) {
      o.size = std::strtoull(argv[i + 1], &end, 10);
      // gRPC's default limit for a received message is 4 MiB.
      if (*end != '\0' || o.size == 0 || o.size > 4000000) return false;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, o)) return Usage();
  const char* segment = o.segment;
  const char* peer = o.peer;
  const char* report = o.report;
  const long count = o.count;
  const unsigned long long size = o.size;

  // A numeric address only: the zcal key needs one, and a name would send
  // the server to the resolver.
  if (!zcal::client::MakeKey(peer)) {
    std::fprintf(stderr, "grpc_zc: --peer %s is not an IPv4 or IPv6 address\n", peer);
    return 2;
  }
  // Before the segment is opened, which would take ZCAL_REPORT's name.
  if (report != nullptr && zcal_report_open(report) != 0) {
    std::fprintf(stderr, "grpc_zc: --report %s: %s\n", report, zcal_error_detail());
    return 1;
  }
  const ZerocopyArgs zc = FromZcal(segment, peer);
  std::printf("grpc_zc: peer %s: %s: %s=%d %s=%d\n", peer, zc.why.c_str(), kZerocopyEnabled,
              zc.enabled ? 1 : 0, kZerocopyThreshold, zc.threshold);
  std::fflush(stdout);

  // The same two arguments on both ends: the server's apply to the sockets
  // it accepts, the channel's to the one it connects.
  EchoService service;
  grpc::ServerBuilder builder;
  int port = 0;
  const std::string listen = std::string(std::strchr(peer, ':') ? "[" : "") + peer +
                             (std::strchr(peer, ':') ? "]" : "");
  builder.AddListeningPort(listen + ":0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterCallbackGenericService(&service);
  builder.AddChannelArgument(kZerocopyEnabled, zc.enabled ? 1 : 0);
  builder.AddChannelArgument(kZerocopyMaxSends, kPendingSends);
  if (zc.enabled) builder.AddChannelArgument(kZerocopyThreshold, zc.threshold);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "grpc_zc: cannot listen on %s\n", listen.c_str());
    return 1;
  }

  grpc::ChannelArguments channel_args;
  channel_args.SetInt(kZerocopyEnabled, zc.enabled ? 1 : 0);
  channel_args.SetInt(kZerocopyMaxSends, kPendingSends);
  if (zc.enabled) channel_args.SetInt(kZerocopyThreshold, zc.threshold);
  auto channel = grpc::CreateCustomChannel(listen + ":" + std::to_string(port),
                                           grpc::InsecureChannelCredentials(), channel_args);
  grpc::GenericStub stub(channel);

  // Counts each message as the threshold answers it (when reporting is on;
  // no agent: under no scope), with the segment kept open for the run.
  auto counted = zcal::client::Segment::Open(segment);
  const zcal_key key = *zcal::client::MakeKey(peer);
  std::string error;
  for (long call = 0; call < count; ++call) {
    (void)zcal_should_zerocopy_depth(counted ? counted->get() : nullptr, &key,
                                     ZCAL_METHOD_MSG_ZEROCOPY, kPendingSends, size, 0,
                                     zc.enabled ? 1 : 0);
    if (!EchoOnce(stub, call, static_cast<std::size_t>(size), &error)) {
      std::fprintf(stderr, "grpc_zc: %s\n", error.c_str());
      server->Shutdown();
      return 1;
    }
  }
  server->Shutdown();
  std::printf("grpc_zc: calls=%ld bytes_each=%llu replies_ok=%ld\n", count, size, count);
  return 0;
}
