// The agent's HTTP listener (HttpServer, and MetricsServer on top of it):
// what it answers, what idle and slow clients may hold, and how it stops.
#include "zcal/agent/metrics/metrics_server.h"

#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "http_test_util.h"
#include "test_util.h"
#include "zcal/agent/metrics/metrics.h"

namespace zcal::agent::metrics_server_test {
namespace {

using std::chrono::milliseconds;
using testing::BodyOf;
using testing::HttpExchange;
using testing::SeriesValue;
using testing::StatusOf;
using testing::TcpClient;
using testing::WaitFor;

constexpr const char* kPartialRequest = "GET /metrics HTTP/1.1\r\n";
constexpr const char* kScrape =
    "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

bool Contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

double Dropped(const Metrics& metrics, const std::string& reason) {
  return SeriesValue(metrics.Text(), "zcal_http_connections_dropped_total{reason=\"" +
                                         reason + "\"}")
      .value_or(-1);
}

// Opens `count` connections from `source` that each send the start of a
// request and then nothing.
std::vector<TcpClient> OpenIdle(int port, int count,
                                const std::string& source = "127.0.0.1") {
  std::vector<TcpClient> idle;
  for (int i = 0; i < count; ++i) {
    TcpClient client("127.0.0.1", port, source);
    EXPECT_TRUE(client.ok() && client.Send(kPartialRequest)) << i;
    idle.push_back(std::move(client));
  }
  return idle;
}

bool AllClosed(const std::vector<TcpClient>& clients) {
  for (const TcpClient& c : clients) {
    if (!c.PeerClosed()) return false;
  }
  return true;
}

TEST(MetricsServer, ServesTheTextFormatOnAnEphemeralPort) {
  const auto metrics = std::make_shared<Metrics>("9.9.9");
  auto server = MetricsServer::Start("127.0.0.1:0", metrics);
  ASSERT_TRUE(server) << server.error().message;
  EXPECT_GT((*server)->port(), 0);
  EXPECT_EQ((*server)->Url(),
            "http://127.0.0.1:" + std::to_string((*server)->port()) +
                "/metrics");
  const auto response = testing::HttpGet((*server)->port(), "/metrics");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(Contains(response->body, "zcal_build_info{")) << response->body;
  const auto raw = HttpExchange("127.0.0.1", (*server)->port(), kScrape);
  ASSERT_TRUE(raw);
  EXPECT_TRUE(Contains(*raw, "Content-Type: text/plain; version=0.0.4")) << *raw;
  // The first response was counted before the second one rendered.
  EXPECT_EQ(SeriesValue(BodyOf(*raw), "zcal_http_responses_total{code=\"200\"}"),
            1);
}

TEST(MetricsServer, ReportsABusyPortClearly) {
  const auto metrics = std::make_shared<Metrics>("0");
  auto first = MetricsServer::Start("127.0.0.1:0", metrics);
  ASSERT_TRUE(first) << first.error().message;
  const std::string busy = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = MetricsServer::Start(busy, metrics);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, Errc::kBusy);
  EXPECT_TRUE(Contains(second.error().message, busy));
  EXPECT_TRUE(Contains(second.error().message, "Address already in use"));
  EXPECT_TRUE(Contains(second.error().message, "metrics.listen"));
}

TEST(MetricsServer, RejectsANonLocalAddress) {
  auto server = MetricsServer::Start("192.0.2.1:9464",
                                     std::make_shared<Metrics>("0"));
  ASSERT_FALSE(server);
  EXPECT_EQ(server.error().code, Errc::kIo);
  EXPECT_TRUE(Contains(server.error().message, "192.0.2.1:9464"));
  EXPECT_TRUE(Contains(server.error().message, "Cannot assign"));
}

TEST(MetricsServer, RejectsAnAddressThatDoesNotParse) {
  auto server =
      MetricsServer::Start("localhost:9464", std::make_shared<Metrics>("0"));
  ASSERT_FALSE(server);
  EXPECT_EQ(server.error().code, Errc::kInvalidArgument);
  EXPECT_TRUE(Contains(server.error().message, "'localhost:9464'"));
  EXPECT_TRUE(Contains(server.error().message, "[::1]:9464"));
}

TEST(MetricsServer, RejectsASecondRouteForMetricsAndBadLimits) {
  MetricsServerOptions options;
  options.routes.push_back(
      {"/metrics", [](const HttpRequest&) { return HttpResponse{}; }});
  auto twice = MetricsServer::Start("127.0.0.1:0",
                                    std::make_shared<Metrics>("0"), options);
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, Errc::kInvalidArgument);
  EXPECT_TRUE(Contains(twice.error().message, "'/metrics' is given twice"));

  MetricsServerOptions zero;
  zero.limits.max_connections_per_client = 0;
  auto bad = MetricsServer::Start("127.0.0.1:0", std::make_shared<Metrics>("0"),
                                  zero);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
  EXPECT_TRUE(Contains(bad.error().message, "connection limits"));
}

TEST(MetricsServer, ServesOnIpv6Loopback) {
  if (!testing::HasIpv6Loopback()) GTEST_SKIP() << "no IPv6 loopback here";
  const auto metrics = std::make_shared<Metrics>("0");
  auto server = MetricsServer::Start("[::1]:0", metrics);
  ASSERT_TRUE(server) << server.error().message;
  EXPECT_EQ((*server)->Url(), "http://[::1]:" +
                                  std::to_string((*server)->port()) +
                                  "/metrics");
  const auto raw = HttpExchange("::1", (*server)->port(), kScrape);
  ASSERT_TRUE(raw);
  EXPECT_EQ(StatusOf(*raw), 200) << *raw;
}

// Idle half-open connections (a request line and no blank line) must not
// delay a scrape, and are closed later.
TEST(MetricsServer, SixtyFourIdleConnectionsDoNotDelayAScrape) {
  const auto metrics = std::make_shared<Metrics>("0");
  MetricsServerOptions options;
  options.limits.request_timeout = milliseconds(1000);
  auto server = MetricsServer::Start("127.0.0.1:0", metrics, options);
  ASSERT_TRUE(server) << server.error().message;
  const int port = (*server)->port();
  const std::vector<TcpClient> idle = OpenIdle(port, 64);

  const auto start = std::chrono::steady_clock::now();
  const auto raw = HttpExchange("127.0.0.1", port, kScrape);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(raw);
  EXPECT_EQ(StatusOf(*raw), 200);
  std::printf("scrape behind 64 idle connections: %.3f ms\n",
              std::chrono::duration<double, std::milli>(elapsed).count());
  // Answered before any idle connection reached its request timeout: a
  // server that served the scrape only once the idle ones went would have
  // counted timeouts by now. (bench/ has no figure for this: it takes about
  // a millisecond.)
  EXPECT_EQ(Dropped(*metrics, "request_timeout"), 0)
      << "the scrape waited for idle connections to time out";

  // 8 per client: each connection beyond the 8th replaced the oldest
  // waiting one (56, and one more for the scrape); the 7 left time out.
  EXPECT_EQ(Dropped(*metrics, "client_limit"), 57);
  ASSERT_TRUE(WaitFor([&] { return AllClosed(idle); }, milliseconds(30'000)));
  EXPECT_TRUE(WaitFor([&] { return Dropped(*metrics, "request_timeout") == 7; },
                      milliseconds(10'000)))
      << metrics->Text();
  EXPECT_TRUE(WaitFor(
      [&] {
        return SeriesValue(metrics->Text(), "zcal_http_open_connections") == 0;
      },
      milliseconds(10'000)));
}

TEST(MetricsServer, AClientOnlyEvictsItsOwnConnectionsUntilTheServerIsFull) {
  const auto metrics = std::make_shared<Metrics>("0");
  MetricsServerOptions options;
  options.limits.max_connections = 4;
  options.limits.max_connections_per_client = 2;
  auto server = MetricsServer::Start("127.0.0.1:0", metrics, options);
  ASSERT_TRUE(server) << server.error().message;
  const int port = (*server)->port();
  std::vector<TcpClient> a = OpenIdle(port, 2, "127.0.0.2");
  std::vector<TcpClient> b = OpenIdle(port, 2, "127.0.0.3");
  // Admission happens on accept; a scrape from a third source orders it.
  ASSERT_TRUE(HttpExchange("127.0.0.1", port, kScrape, "127.0.0.4"));
  // The server was full: the oldest waiting connection (a's first) went.
  EXPECT_TRUE(WaitFor([&] { return a[0].PeerClosed(); }, milliseconds(5000)));
  EXPECT_EQ(Dropped(*metrics, "server_limit"), 1);

  // A third connection from b replaces b's oldest, not a's.
  std::vector<TcpClient> b3 = OpenIdle(port, 1, "127.0.0.3");
  ASSERT_TRUE(HttpExchange("127.0.0.1", port, kScrape, "127.0.0.4"));
  EXPECT_TRUE(WaitFor([&] { return b[0].PeerClosed(); }, milliseconds(5000)));
  EXPECT_EQ(Dropped(*metrics, "client_limit"), 1);
  EXPECT_FALSE(a[1].PeerClosed());
  EXPECT_FALSE(b[1].PeerClosed());
  EXPECT_FALSE(b3[0].PeerClosed());
}

// Larger than any socket buffers between the two ends.
HttpRoute BigRoute() {
  return {"/big", [](const HttpRequest&) {
            return HttpResponse{200, "text/plain", std::string(64 << 20, 'x')};
          }};
}

TEST(MetricsServer, AClientThatDoesNotReadIsCutAtTheWriteTimeout) {
  const auto metrics = std::make_shared<Metrics>("0");
  MetricsServerOptions options;
  options.limits.write_timeout = milliseconds(300);
  options.routes.push_back(BigRoute());
  auto server = MetricsServer::Start("127.0.0.1:0", metrics, options);
  ASSERT_TRUE(server) << server.error().message;
  TcpClient reader("127.0.0.1", (*server)->port());
  ASSERT_TRUE(reader.Send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_TRUE(WaitFor([&] { return Dropped(*metrics, "write_timeout") == 1; },
                      milliseconds(10'000)))
      << metrics->Text();
  EXPECT_EQ(SeriesValue(metrics->Text(), "zcal_http_open_connections"), 0);
}

TEST(MetricsServer, AConnectionBeingAnsweredIsNeverEvicted) {
  const auto metrics = std::make_shared<Metrics>("0");
  MetricsServerOptions options;
  options.limits.max_connections_per_client = 1;
  options.routes.push_back(BigRoute());
  auto server = MetricsServer::Start("127.0.0.1:0", metrics, options);
  ASSERT_TRUE(server) << server.error().message;
  const int port = (*server)->port();
  TcpClient reader("127.0.0.1", port);
  ASSERT_TRUE(reader.Send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(WaitFor([&] { return reader.Readable(); }, milliseconds(10'000)));
  // Its client's only connection is being answered: a second one is closed
  // unread instead of replacing it.
  TcpClient second("127.0.0.1", port);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second.ReadToEnd(milliseconds(10'000)), "");
  EXPECT_EQ(Dropped(*metrics, "client_limit"), 1);
  EXPECT_FALSE(reader.PeerClosed());
  const std::string body = reader.ReadToEnd(milliseconds(30'000));
  EXPECT_GT(body.size(), std::size_t{64} << 20);
}

TEST(MetricsServer, AnswersOtherPathsMethodsAndOversizeRequests) {
  const auto metrics = std::make_shared<Metrics>("0");
  MetricsServerOptions options;
  options.routes.push_back({"/", [](const HttpRequest& request) {
                              return HttpResponse{
                                  200, "text/html; charset=utf-8",
                                  "<p>query=" + std::string(request.query) +
                                      "</p>"};
                            }});
  options.routes.push_back({"/fail", [](const HttpRequest&) -> HttpResponse {
                              throw std::runtime_error("no state yet");
                            }});
  auto server = MetricsServer::Start("127.0.0.1:0", metrics, options);
  ASSERT_TRUE(server) << server.error().message;
  const int port = (*server)->port();
  const auto exchange = [&](const std::string& request) {
    return HttpExchange("127.0.0.1", port, request).value_or("");
  };

  const std::string page = exchange("GET /?a=1 HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(StatusOf(page), 200);
  EXPECT_TRUE(Contains(page, "Content-Type: text/html; charset=utf-8"));
  EXPECT_EQ(BodyOf(page), "<p>query=a=1</p>");

  const std::string head = exchange("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(StatusOf(head), 200);
  EXPECT_TRUE(Contains(head, "Content-Length: ")) << head;
  EXPECT_EQ(BodyOf(head), "");

  const std::string missing = exchange("GET /nope HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(StatusOf(missing), 404);
  EXPECT_TRUE(Contains(BodyOf(missing), "/metrics")) << missing;

  const std::string post = exchange("POST /metrics HTTP/1.1\r\nHost: x\r\n"
                                    "Content-Length: 0\r\n\r\n");
  EXPECT_EQ(StatusOf(post), 405);
  EXPECT_TRUE(Contains(post, "Allow: GET, HEAD")) << post;

  const std::string thrown = exchange("GET /fail HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(StatusOf(thrown), 500);
  EXPECT_TRUE(Contains(BodyOf(thrown), "no state yet"));

  const std::string garbage = exchange("NOT HTTP AT ALL\r\n\r\n");
  EXPECT_EQ(StatusOf(garbage), 400) << garbage;

  const std::string huge = exchange("GET /metrics HTTP/1.1\r\nX-Pad: " +
                                    std::string(16 << 10, 'p') + "\r\n\r\n");
  EXPECT_EQ(StatusOf(huge), 431) << huge.substr(0, 200);

  const std::string text = metrics->Text();
  for (const char* code : {"200", "404", "405", "500", "400", "431"}) {
    EXPECT_TRUE(SeriesValue(text, std::string("zcal_http_responses_total{code=\"") +
                                      code + "\"}")
                    .value_or(0) >= 1)
        << code << "\n"
        << text;
  }
}

TEST(MetricsServer, StopsAtOnceWithClientsConnectedAndFreesThePort) {
  const auto metrics = std::make_shared<Metrics>("0");
  auto server = MetricsServer::Start("127.0.0.1:0", metrics);
  ASSERT_TRUE(server) << server.error().message;
  const int port = (*server)->port();
  const std::vector<TcpClient> idle = OpenIdle(port, 8);
  ASSERT_TRUE(HttpExchange("127.0.0.1", port, kScrape));

  const auto start = std::chrono::steady_clock::now();
  (*server)->Stop();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  std::printf("Stop() with 8 idle connections: %.3f ms\n",
              std::chrono::duration<double, std::milli>(elapsed).count());
  // Stop does not wait for the idle clients (they would never leave): it
  // returned, and every connection is closed now, not at some timeout.
  EXPECT_TRUE(AllClosed(idle));
  EXPECT_EQ(SeriesValue(metrics->Text(), "zcal_http_open_connections"), 0);
  (*server)->Stop();  // idempotent

  auto again = MetricsServer::Start("127.0.0.1:" + std::to_string(port), metrics);
  EXPECT_TRUE(again) << again.error().message;
}

}  // namespace
}  // namespace zcal::agent::metrics_server_test
