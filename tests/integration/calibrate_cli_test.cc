// `zcal calibrate` as a user runs it: the real binary, real probes on
// loopback, files on disk.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_command.h"
#include "zcal/calibrator/depth.h"
#include "zcal/calibrator/samples_csv.h"

namespace zcal::testing::calibrate_cli_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kZerocopyMethods[] = {"msg_zerocopy", "uring_send_zc",
                                            "uring_send_zc_fixed"};

class CalibrateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("zcal-calibrate-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static CommandResult Calibrate(std::vector<std::string> args) {
    args.insert(args.begin(), {ZcalPath(), "calibrate"});
    return RunCommand(args);
  }

  std::filesystem::path dir_;
};

// The send windows of the probes in a --samples-out file: how many rows,
// and the sum of their wall_ns column.
struct SendWindows {
  std::size_t rows = 0;
  std::uint64_t sum_ns = 0;
};

SendWindows SendWindowsOf(const std::filesystem::path& csv) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  std::size_t column = 0;
  for (std::istringstream header(line); std::getline(header, line, ',') && line != "wall_ns";) {
    ++column;
  }
  SendWindows windows;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string field;
    for (std::size_t i = 0; i <= column; ++i) std::getline(row, field, ',');
    ++windows.rows;
    windows.sum_ns += std::stoull(field);
  }
  return windows;
}

TEST_F(CalibrateCli, DefaultLoopbackJsonHasAllFiveMethodsAndVerdictsWithReasons) {
  const std::string csv = (dir_ / "samples.csv").string();
  const auto r = Calibrate({"--json", "--samples-out", csv});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  // Not a terminal: no progress line.
  EXPECT_EQ(r.err, "");
  const auto doc = nlohmann::json::parse(r.out);
  const auto& methods = doc.at("paths").at("loopback").at("methods");
  ASSERT_EQ(methods.size(), 3u) << r.out;
  for (const char* name : kZerocopyMethods) {
    const auto& m = methods.at(name);
    EXPECT_EQ(m.at("verdict"), "never") << name;
    const std::string reason = m.at("reason");
    EXPECT_TRUE(reason == "kernel_copied" || reason == "unsupported") << name << ": " << reason;
    EXPECT_FALSE(m.at("detail").get<std::string>().empty()) << name;
    if (reason == "kernel_copied") {
      ASSERT_FALSE(m.at("sizes").empty()) << name;
      EXPECT_GE(m.at("sizes")[0].at("zerocopy").at("copied_fraction").get<double>(), 0.5)
          << m.dump();
    }
  }
  const auto& probes = doc.at("probes");
  ASSERT_EQ(probes.size(), 5u) << probes.dump();
  for (const char* name : {"copy", "msg_zerocopy", "uring_send", "uring_send_zc",
                           "uring_send_zc_fixed"}) {
    const auto& p = probes.at(name);
    EXPECT_GT(p.at("ok").get<int>() + p.at("unsupported").get<int>(), 0) << name;
  }
  EXPECT_GT(probes.at("copy").at("ok").get<int>(), 0);
  EXPECT_EQ(doc.at("host").at("interface").at("name"), "lo");
  EXPECT_FALSE(doc.at("host").at("kernel_release").get<std::string>().empty());
  EXPECT_EQ(doc.at("host").at("fingerprint").get<std::string>().size(), 16u);
  // The load the result was measured under: shares of all CPUs.
  const auto& load = doc.at("host_load");
  ASSERT_TRUE(load.is_object()) << doc.dump();
  for (const char* share : {"busy_share", "steal_share", "own_share"}) {
    EXPECT_GE(load.at(share).get<double>(), 0.0) << share;
    EXPECT_LE(load.at(share).get<double>(), 1.0) << share;
  }
  EXPECT_GT(load.at("own_share").get<double>(), 0.0);
  EXPECT_GE(load.at("runnable_max").get<int>(), 1);
  EXPECT_GE(load.at("runnable_mean").get<double>(), 1.0);
  EXPECT_GT(load.at("runnable_reads").get<int>(), 0);
  EXPECT_GT(load.at("window_seconds").get<double>(), 0.0);
  const auto& timings = doc.at("timings");
  // The default budget bounds it, told by what the probes measured rather
  // than by a stopwatch on a shared machine: their send windows fit the
  // budget. How long it took is printed; bench/calibration_seconds.py
  // measures durations side by side.
  EXPECT_EQ(timings.at("budget_seconds").get<double>(), 2.0);
  const SendWindows windows = SendWindowsOf(csv);
  EXPECT_EQ(windows.rows, timings.at("samples").get<std::size_t>());
  EXPECT_LE(windows.sum_ns, 2'000'000'000u);
  std::printf("default loopback calibration: %.2f s of its %.0f s budget\n",
              timings.at("duration_seconds").get<double>(),
              timings.at("budget_seconds").get<double>());
  EXPECT_GT(timings.at("probes_run").get<int>(), 0);
  EXPECT_EQ(timings.at("cancelled"), false);
  EXPECT_EQ(doc.at("objective"), "efficiency");
}

TEST_F(CalibrateCli, TextOutputHasVerdictsSizeTableAndHostFacts) {
  const auto r = Calibrate({"--min", "4K", "--max", "16K", "--budget", "3"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("path loopback"));
  EXPECT_THAT(r.out, HasSubstr("msg_zerocopy vs copy:"));
  EXPECT_THAT(r.out, HasSubstr("zc MB/s"));
  EXPECT_THAT(r.out, HasSubstr("host (fingerprint "));
  EXPECT_THAT(r.out, HasSubstr("interface    lo:"));
  EXPECT_THAT(r.out, HasSubstr("  load         host busy "));
  EXPECT_THAT(r.out, HasSubstr(" s of a 3 s budget"));
}

TEST_F(CalibrateCli, SamplesOutIsTheCsvThatAnalyzeReadsToTheSameVerdicts) {
  const std::string csv = (dir_ / "samples.csv").string();
  const auto r = Calibrate({"--json", "--min", "4K", "--max", "16K", "--budget", "3",
                            "--samples-out", csv});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  for (const char* column : {"method", "size", "mb_per_s", "cpu_pct", "path", "bytes",
                             "wall_ns", "cpu_ns", "zc_completions", "zc_copied", "status"}) {
    EXPECT_THAT(header, HasSubstr(column));
  }
  const auto again = RunCommand({ZcalPath(), "analyze", "--json", csv});
  ASSERT_EQ(again.exit_status, 0) << again.err;
  const auto live = nlohmann::json::parse(r.out).at("paths");
  const auto offline = nlohmann::json::parse(again.out).at("paths");
  for (const char* name : kZerocopyMethods) {
    EXPECT_EQ(live.at("loopback").at("methods").at(name).at("verdict"),
              offline.at("loopback").at("methods").at(name).at("verdict"));
    EXPECT_EQ(live.at("loopback").at("methods").at(name).at("reason"),
              offline.at("loopback").at("methods").at(name).at("reason"));
  }
}

TEST_F(CalibrateCli, MethodsSelectsWhatIsProbed) {
  const auto r = Calibrate({"--json", "--methods", "copy,msg_zerocopy", "--max", "8K",
                            "--budget", "2"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("probes").size(), 2u);
  const auto& methods = doc.at("paths").at("loopback").at("methods");
  EXPECT_EQ(methods.size(), 1u);
  EXPECT_EQ(methods.at("msg_zerocopy").at("reason"), "kernel_copied");
}

TEST_F(CalibrateCli, BadArgumentsExitTwoWithAMessageNamingThem) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--methods", "copy,bogus"}, "unknown method \"bogus\""},
      {{"--min", "12X"}, "--min: '12X'"},
      {{"--min", "0"}, "min_size"},
      {{"--min", "64K", "--max", "4K"}, "max_size"},
      {{"--path", "nowhere"}, "path"},
      {{"--budget", "0"}, "--budget"},
      {{"--objective", "speed"}, "--objective"},
      {{"--max-rate", "fast"}, "--max-rate"},
      {{"--samples-out", "/nonexistent-dir/x.csv"}, "/nonexistent-dir/x.csv"},
      {{"--no-such-flag"}, "--no-such-flag"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = Calibrate(args);
    EXPECT_EQ(r.exit_status, 2) << args[0] << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(message)) << args[0];
    EXPECT_EQ(r.out, "") << args[0];
  }
}

TEST_F(CalibrateCli, ExitsThreeWhenNoProbeCanRun) {
  // A port nothing listens on: every probe is refused.
  const auto r = Calibrate({"--path", "127.0.0.1:1", "--budget", "2"});
  EXPECT_EQ(r.exit_status, 3) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("no probe could run on path 127.0.0.1:1"));
  EXPECT_THAT(r.err, HasSubstr("ECONNREFUSED"));
}

// Runs zcal with its stdin, stdout and stderr on a pseudo-terminal.
std::pair<int, std::string> RunOnTerminal(const std::vector<std::string>& args) {
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(master, buffer, sizeof buffer);
    if (n <= 0) break;  // EIO once the child closed the terminal
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

TEST_F(CalibrateCli, ShowsProgressOnlyOnATerminal) {
  const std::vector<std::string> args = {ZcalPath(), "calibrate", "--methods", "copy",
                                         "--max", "8K", "--budget", "1"};
  const auto [status, text] = RunOnTerminal(args);
  if (status == -1) GTEST_SKIP() << "no pseudo-terminal here";
  EXPECT_EQ(status, 0) << text;
  EXPECT_THAT(text, HasSubstr("calibrating: probe 1 of ~"));
  EXPECT_THAT(text, HasSubstr("copy at 1024 bytes"));
  const auto piped = RunCommand(args);
  EXPECT_EQ(piped.exit_status, 0);
  EXPECT_THAT(piped.err + piped.out, Not(HasSubstr("calibrating: probe")));
}

// The discard path: real zerocopy in a private namespace, the size clamp
// stated in both outputs.
TEST_F(CalibrateCli, DiscardPathMeasuresRealZerocopyAndStatesTheSizeClamp) {
  const auto r = Calibrate({"--path", "discard", "--json", "--budget", "4", "--max", "256K"});
  if (r.exit_status == 3 && r.err.find("private network namespace") != std::string::npos) {
    GTEST_SKIP() << r.err;
  }
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& clamp = doc.at("size_clamp");
  EXPECT_EQ(clamp.at("requested_max_bytes"), 262144);
  EXPECT_EQ(clamp.at("max_bytes"), 65507);
  EXPECT_THAT(clamp.at("reason").get<std::string>(), HasSubstr("UDP"));
  const auto& methods = doc.at("paths").at("discard").at("methods");
  ASSERT_EQ(methods.size(), 3u) << r.out;
  for (const char* name : kZerocopyMethods) {
    const auto& reason = methods.at(name).at("reason");  // null when it wins
    EXPECT_TRUE(reason.is_null() || reason != "kernel_copied") << methods.at(name).dump();
    // Every refined method says why its probes ended, with a sentence.
    const auto& stop = methods.at(name).at("stop");
    ASSERT_TRUE(stop.is_object()) << methods.at(name).dump();
    EXPECT_THAT(stop.at("reason").get<std::string>(),
                ::testing::AnyOf("resolution", "noise", "probes", "budget"));
    EXPECT_FALSE(stop.at("detail").get<std::string>().empty());
  }
  EXPECT_EQ(doc.at("host").at("interface").at("name"), "lo");

  const auto text = Calibrate({"--path", "discard", "--budget", "2", "--max", "1M",
                               "--methods", "copy,msg_zerocopy"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("note: --max 1048576 bytes is above the largest UDP "
                                  "payload over IPv4 (65507 bytes); probed up to 65507 bytes"));
  EXPECT_THAT(text.out, HasSubstr("    probes ended ("));
  // Loopback carries any size: no clamp.
  const auto loopback = Calibrate({"--json", "--budget", "1", "--methods", "copy"});
  ASSERT_EQ(loopback.exit_status, 0) << loopback.err;
  EXPECT_TRUE(nlohmann::json::parse(loopback.out).at("size_clamp").is_null());
}

TEST_F(CalibrateCli, DiscardPathRefusesAMinimumAboveOneDatagram) {
  const auto r = Calibrate({"--path", "discard", "--min", "100K", "--max", "1M"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_THAT(r.err, HasSubstr("min_size: at most 65507 bytes on the discard path"));
}


// Depth classes: each class is calibrated and reported on its own, its
// samples carry it, and `zcal analyze` decides the same per class.
TEST_F(CalibrateCli, DepthClassesAreCalibratedReportedAndReanalysedPerClass) {
  const std::string csv = (dir_ / "depths.csv").string();
  const auto r = Calibrate({"--path", "discard", "--json", "--depth", "stream,1",
                            "--methods", "copy,msg_zerocopy", "--min", "4K", "--max", "64K",
                            "--budget", "4", "--samples-out", csv});
  if (r.exit_status == 3 && r.err.find("private network namespace") != std::string::npos) {
    GTEST_SKIP() << r.err;
  }
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("depth"), "stream");
  const auto& depths = doc.at("depths");
  ASSERT_EQ(depths.size(), 2u) << r.out;
  EXPECT_EQ(depths[0].at("depth"), "1");
  EXPECT_EQ(depths[1].at("depth"), "stream");
  // Every class answers for the method: decided on its own probes, or not
  // probed with the reason (its neighbours give its answer), never both.
  for (const auto& one : depths) {
    const bool decided = one.at("paths").at("discard").at("methods").contains("msg_zerocopy");
    const bool skipped = one.at("not_probed").contains("msg_zerocopy");
    EXPECT_NE(decided, skipped) << one.dump();
    if (skipped) {
      EXPECT_THAT(one.at("not_probed").at("msg_zerocopy").get<std::string>(), HasSubstr("depth"));
    }
  }
  EXPECT_EQ(doc.at("paths"), depths[1].at("paths")) << "the top level is the stream class's";
  if (depths[0].at("not_probed").contains("msg_zerocopy")) {
    // Zerocopy never won at stream on this host, so depth 1 has nothing to
    // probe; the rest needs a measured class 1 (the rule itself is tested
    // in depth_classes_test.cc).
    GTEST_SKIP() << "msg_zerocopy not probed at depth 1: "
                 << depths[0].at("not_probed").at("msg_zerocopy");
  }

  std::ifstream in(csv);
  const std::string table((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(table.substr(0, table.find('\n')), HasSubstr(",depth"));
  // The stream class, probed first, has the dense grid (three sizes per
  // octave, so that the local fit can decide where steps reject the
  // curves); depth 1 is probed at some of its sizes, so that its cost per
  // send is measured against the stream's own samples.
  const auto samples = calibrator::ParseSamplesCsv(table, csv);
  ASSERT_TRUE(samples) << samples.error().message;
  std::set<std::uint64_t> stream_sizes, one_sizes;
  for (const calibrator::Sample& s : *samples) {
    if (s.method != calibrator::Method::kMsgZerocopy) continue;
    (s.depth == calibrator::kStreamDepth ? stream_sizes : one_sizes).insert(s.size_bytes);
  }
  EXPECT_FALSE(one_sizes.empty()) << "the depth-1 probes' rows say depth 1";
  ASSERT_GE(stream_sizes.size(), 2u);
  for (auto it = std::next(stream_sizes.begin()); it != stream_sizes.end(); ++it) {
    EXPECT_LE(std::log2(static_cast<double>(*it) / static_cast<double>(*std::prev(it))), 0.4)
        << "stream sizes " << *std::prev(it) << " and " << *it;
  }
  std::size_t shared = 0;
  for (std::uint64_t size : one_sizes) shared += stream_sizes.contains(size) ? 1 : 0;
  EXPECT_GE(shared, 2u) << "depth 1 measured at sizes the stream class measured";
  // Depth 1 is decided as the stream class plus its cost per send: the
  // result says by how much, or why that model was refused
  // (docs/calibrator.md, "A cost per send"); the stream class has none.
  const auto& one = depths[0].at("paths").at("discard").at("methods").at("msg_zerocopy");
  ASSERT_TRUE(one.at("class_offset").is_object()) << one.dump();
  const auto& offset = one.at("class_offset");
  if (offset.at("rejected").is_null()) {
    EXPECT_GT(offset.at("translated").get<int>(), 0) << offset.dump();
    EXPECT_GT(offset.at("ns_per_send").get<double>(), 0)
        << "waiting for each send's completion costs something";
  } else {
    EXPECT_EQ(offset.at("translated").get<int>(), 0) << offset.dump();
  }
  EXPECT_TRUE(depths[1]
                  .at("paths")
                  .at("discard")
                  .at("methods")
                  .at("msg_zerocopy")
                  .at("class_offset")
                  .is_null());

  const auto again = RunCommand({ZcalPath(), "analyze", "--json", csv});
  ASSERT_EQ(again.exit_status, 0) << again.err;
  const auto offline = nlohmann::json::parse(again.out).at("depths");
  ASSERT_EQ(offline.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& live = depths[i].at("paths").at("discard").at("methods").at("msg_zerocopy");
    const auto& read = offline[i].at("paths").at("discard").at("methods").at("msg_zerocopy");
    EXPECT_EQ(offline[i].at("depth"), depths[i].at("depth"));
    EXPECT_EQ(live.at("verdict"), read.at("verdict"));
  }
  const auto text = RunCommand({ZcalPath(), "analyze", csv});
  EXPECT_THAT(text.out, HasSubstr("depth 1 (zerocopy sends in flight):"));
  EXPECT_THAT(text.out, offset.at("rejected").is_null()
                            ? HasSubstr("cost per send: the stream class's +")
                            : HasSubstr("decided on this class's own samples: "));
  EXPECT_THAT(text.out, HasSubstr("depth stream (zerocopy sends in flight):"));
}

// A budget shorter than the coarse grid (19 sizes, 2 methods, one round of
// 10 ms probes on the discard path): the budget, not the planner, ends the
// probes, and every output says so.
TEST_F(CalibrateCli, SaysWhenTheBudgetEndedTheProbes) {
  const std::vector<std::string> args = {"--path", "discard", "--depth", "1,stream", "--methods",
                                         "copy,msg_zerocopy", "--min", "1K", "--max", "64K",
                                         "--budget", "0.3"};
  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  const auto r = Calibrate(json_args);
  if (r.exit_status == 3 && r.err.find("private network namespace") != std::string::npos) {
    GTEST_SKIP() << r.err;
  }
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& stop = doc.at("paths").at("discard").at("methods").at("msg_zerocopy").at("stop");
  EXPECT_EQ(stop.at("reason"), "budget") << r.out;
  EXPECT_EQ(stop.at("detail"), "the calibration's time ran out first");

  const auto text = Calibrate(args);
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("probes ended (budget): the calibration's time ran out first"));
  EXPECT_THAT(text.out, HasSubstr(" *\n")) << "the class table marks the cell";
  EXPECT_THAT(text.out, HasSubstr("  *: the budget ended its probes before the resolution"));
}

TEST_F(CalibrateCli, BadDepthsExitTwoNamingThemAndWriteNothing) {
  const std::string csv = (dir_ / "never.csv").string();
  for (const char* bad : {"0", "-1", "four", "1,1", "1,2,3,4,5,6,7,8,stream", "129", ""}) {
    const auto r = Calibrate({"--path", "discard", "--depth", bad, "--samples-out", csv});
    EXPECT_EQ(r.exit_status, 2) << bad << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("--depth")) << bad;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_FALSE(std::filesystem::exists(csv)) << bad;
  }
}

}  // namespace
}  // namespace zcal::testing::calibrate_cli_test
