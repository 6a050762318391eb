// zcal sink: serves the peer sink alone, for hosts that only receive (a
// storage target whose clients calibrate toward it). The agent serves the
// same sink from its `sink:` section (docs/peers.md).
#include <signal.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "zcal/agent/cli/commands.h"
#include "zcal/agent/config/sink_settings.h"
#include "zcal/agent/metrics/metrics.h"
#include "zcal/agent/metrics/metrics_server.h"
#include "zcal/common/units.h"

namespace zcal::agent {
namespace {

std::string Summary(const probes::PeerSinkStats& s) {
  std::string text = "bytes received " + std::to_string(s.bytes_received) + ", connections " +
                     std::to_string(s.connections_accepted) + ", sessions";
  for (std::size_t i = 0; i < probes::kSinkOutcomes; ++i) {
    text += " " + std::string(probes::SinkOutcomeName(static_cast<probes::SinkOutcome>(i))) +
            "=" + std::to_string(s.outcomes[i]);
  }
  text += "; refused per source " + std::to_string(s.refused_per_source) +
          ", accept paused " + std::to_string(s.accept_pauses);
  return text;
}

// The same zcal_sink_* series as the agent's sink, and the same bounded
// listener (docs/metrics.md, "The HTTP listener"), for hosts that run the
// sink alone and are scraped all the same. nullptr without --metrics-listen.
Result<std::unique_ptr<MetricsServer>> StartMetrics(const std::string& listen,
                                                    const std::shared_ptr<probes::PeerSink>& sink) {
  if (listen.empty()) return std::unique_ptr<MetricsServer>();
  auto metrics = std::make_shared<Metrics>(ZCAL_VERSION, MetricsRole::kSink);
  metrics->SetSink(sink);
  MetricsServerOptions server_options;
  server_options.setting = "--metrics-listen";
  server_options.disable_hint = "leave --metrics-listen out";
  auto server = MetricsServer::Start(listen, metrics, std::move(server_options));
  if (!server) return tl::unexpected(server.error());
  spdlog::info("zcal sink: metrics at {}", (*server)->Url());
  return std::move(*server);
}

void LogServing(const probes::PeerSink& sink, const probes::PeerSinkOptions& options,
                const SinkSettings& settings) {
  const std::size_t keys = options.keys ? options.keys->keys.size() : 0;
  spdlog::info("zcal sink: serving on {} ({}, {}, at most {} session(s) of {}s)",
               common::ToString(sink.endpoint()),
               keys != 0 ? std::to_string(keys) + " key(s)" : std::string("no authentication"),
               settings.allow.empty()
                   ? std::string("any source")
                   : std::to_string(settings.allow.size()) + " allowed prefix(es)",
               options.max_sessions, options.max_session_seconds.count());
}

// Logs what happened every `every` until SIGTERM or SIGINT, then stops.
int ServeUntilStopped(probes::PeerSink& sink, MetricsServer* metrics_server,
                      std::chrono::milliseconds every, const sigset_t& stop_signals) {
  probes::PeerSinkStats reported = sink.Stats();
  for (;;) {
    timespec wait{};
    wait.tv_sec = static_cast<time_t>(every.count() / 1000);
    wait.tv_nsec = static_cast<long>(every.count() % 1000) * 1'000'000;
    const int signal = sigtimedwait(&stop_signals, nullptr, &wait);
    const probes::PeerSinkStats now = sink.Stats();
    if (signal == SIGTERM || signal == SIGINT) {
      if (metrics_server != nullptr) metrics_server->Stop();
      sink.Stop();
      spdlog::info("zcal sink: stopped by {}; {}", signal == SIGTERM ? "SIGTERM" : "SIGINT",
                   Summary(sink.Stats()));
      return kExitOk;
    }
    // A line only when something happened, so an idle sink logs nothing.
    if (now.connections_accepted != reported.connections_accepted ||
        now.outcomes != reported.outcomes || now.accept_pauses != reported.accept_pauses) {
      spdlog::info("zcal sink: {}", Summary(now));
      reported = now;
    }
  }
}

int RunSink(const SinkSettings& settings, const std::string& report_every,
            const std::string& metrics_listen) {
  auto logger = spdlog::stderr_color_mt("zcal-sink");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_default_logger(logger);
  spdlog::flush_on(spdlog::level::info);

  auto every = common::ParseDuration(report_every);
  if (!every || every->count() < 1000) {
    spdlog::error("zcal sink: --report-every: {}",
                  every ? "at least 1s" : every.error().message);
    return ExitStatusOf(Errc::kInvalidArgument);
  }
  std::vector<std::string> warnings;
  auto options = ToPeerSinkOptions(settings, SettingSpelling::kCommandLine, warnings);
  if (!options) {
    spdlog::error("zcal sink: {}", options.error().message);
    return ExitStatusOf(options.error(), kExitUsage);
  }
  for (const std::string& w : warnings) spdlog::warn("zcal sink: {}", w);

  // SIGTERM and SIGINT end the sink; they are taken synchronously, so no
  // handler runs in the sink's thread.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto started = probes::PeerSink::Start(*options);
  if (!started) {
    spdlog::error("zcal sink: {}", started.error().message);
    return ExitStatusOf(started.error());
  }
  const std::shared_ptr<probes::PeerSink> sink = std::move(*started);
  auto metrics_server = StartMetrics(metrics_listen, sink);
  if (!metrics_server) {
    sink->Stop();
    spdlog::error("zcal sink: {}", metrics_server.error().message);
    return ExitStatusOf(metrics_server.error());
  }
  LogServing(*sink, *options, settings);
  return ServeUntilStopped(*sink, metrics_server->get(), *every, stop_signals);
}

}  // namespace

Command AddSinkCommand(CLI::App& parent) {
  auto settings = std::make_shared<SinkSettings>();
  auto report_every = std::make_shared<std::string>("60s");
  auto metrics_listen = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand(
      "sink",
      "Serve the peer sink that other hosts' zcal agents and `zcal calibrate "
      "--path ADDR:PORT` send their probes to (docs/peers.md, "
      "docs/peer-protocol.md). Runs until SIGTERM or SIGINT.");
  app->add_option("--listen", settings->listen,
                  "ADDR:PORT or [V6ADDR]:PORT to listen on (port 0: any free port)")
      ->required();
  app->add_option("--allow", settings->allow,
                  "CIDR prefixes that may connect (comma-separated or repeated; "
                  "default: any); others are closed before a byte is read")
      ->delimiter(',');
  app->add_option("--key-file", settings->key_file,
                  "Key file of lines KEYID HEXSECRET (zcal keygen); every key in "
                  "it is accepted. Required off loopback unless --auth none");
  app->add_option("--auth", settings->auth,
                  "key, or none to accept any client (logged as a warning off loopback)")
      ->capture_default_str();
  app->add_option("--max-sessions", settings->max_sessions,
                  "Sessions at once; others are answered busy (1 to 64)")
      ->capture_default_str();
  app->add_option("--max-connections", settings->max_connections,
                  "Sockets at once, handshakes included; more are closed at accept "
                  "(4 to 4096)")
      ->capture_default_str();
  app->add_option("--max-connections-per-source", settings->max_connections_per_source,
                  "Sockets one source address may hold of --max-connections; more are "
                  "answered source_limit and closed at accept (4 to 4096)")
      ->capture_default_str();
  app->add_option("--max-session-seconds", settings->max_session_seconds,
                  "Longest session granted (1s to 600s)")
      ->capture_default_str();
  app->add_option("--max-bytes-per-second", settings->max_bytes_per_second,
                  "Byte rate a session may send (100M = 100MiB/s, 10Gbit/s; "
                  "docs/units.md); a client must ask for at most this; 0 = no cap")
      ->capture_default_str();
  app->add_option("--idle-timeout", settings->idle_timeout,
                  "A data connection silent this long is closed (100ms to 600s)")
      ->capture_default_str();
  app->add_option("--handshake-deadline", settings->handshake_deadline,
                  "Time a client has from connect to its hello (100ms to 60s)")
      ->capture_default_str();
  app->add_option("--report-every", *report_every,
                  "Log the counters this often when they changed")
      ->capture_default_str();
  app->add_option("--metrics-listen", *metrics_listen,
                  "ADDR:PORT to serve Prometheus metrics on (/metrics: "
                  "zcal_sink_*, zcal_http_*, zcal_build_info; port 0: any free "
                  "port); default: none");
  app->footer(
      "Exit status: 0 stopped by a signal; 1 an address (--listen, "
      "--metrics-listen) cannot be bound; 2 bad options or key file.");
  return {app, [settings, report_every, metrics_listen] {
            return RunSink(*settings, *report_every, *metrics_listen);
          }};
}

}  // namespace zcal::agent
