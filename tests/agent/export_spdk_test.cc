// The spdk and spdk-rpc formats against SPDK's documented shapes
// (tests/data/spdk, written from SPDK's JSON-RPC reference and its RPC
// decoder): SPDK is not in Debian, so no live target reads them here. SPDK's
// decoder refuses a member it does not know and a number outside uint32, so
// every member zcal writes must be documented, of the documented type.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "zcal/agent/report/export_format.h"
#include "zcal/testing/test_data.h"

namespace zcal::agent::export_spdk_test {
namespace {

using nlohmann::json;

json Fixture(const std::string& name) {
  std::ifstream in(zcal::testing::TestData() / "spdk" / name);
  return json::parse(in);
}

ExportedMethod Method(calibrator::Method method, calibrator::Verdict verdict, std::uint64_t bytes) {
  ExportedMethod m;
  m.method = method;
  m.verdict = verdict;
  m.threshold_bytes = bytes;
  m.scope = "host_default";
  m.measured_at_ns = 1'700'000'000'000'000'000ull;
  return m;
}

// Both SPDK modules send with MSG_ZEROCOPY: the values hold msg_zerocopy
// only, as `zcal export --format spdk` reads them.
ExportValues Values(calibrator::Verdict verdict, std::uint64_t bytes) {
  ExportValues v;
  v.segment = "/zcal";
  v.key = "host_default";
  v.methods = {Method(calibrator::Method::kMsgZerocopy, verdict, bytes)};
  return v;
}

// Every verdict zcal maps: a threshold, always (0), never (flags off).
std::vector<ExportValues> AllVerdicts() {
  return {Values(calibrator::Verdict::kThreshold, 16384), Values(calibrator::Verdict::kAlways, 0),
          Values(calibrator::Verdict::kNever, 0)};
}

// Whether `value` has the fixture's type name.
bool HasType(const json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "integer") return value.is_number_integer();
  if (type == "uint32") {
    if (value.is_number_unsigned()) return value.get<std::uint64_t>() <= UINT32_MAX;
    return value.is_number_integer() && value.get<std::int64_t>() >= 0 &&
           value.get<std::int64_t>() <= std::int64_t{UINT32_MAX};
  }
  ADD_FAILURE() << "the fixture names an unknown type " << type;
  return false;
}

// `object` has only members `shape` documents, each of its type, and every
// member it requires. The failures name the member.
void ExpectDocumented(const json& object, const json& shape, const std::string& where) {
  ASSERT_TRUE(object.is_object()) << where << ": " << object.dump();
  for (const auto& [name, value] : object.items()) {
    ASSERT_TRUE(shape.contains(name)) << where << ": " << name << " is not documented";
    EXPECT_TRUE(HasType(value, shape.at(name).at("type").get<std::string>()))
        << where << ": " << name << " = " << value.dump() << " is not a "
        << shape.at(name).at("type");
    if (shape.at(name).contains("value")) {
      EXPECT_EQ(value, shape.at(name).at("value")) << where;
    }
    if (shape.at(name).contains("values")) {
      const auto& allowed = shape.at(name).at("values");
      EXPECT_NE(std::find(allowed.begin(), allowed.end(), value), allowed.end())
          << where << ": " << name << " = " << value.dump();
    }
  }
  for (const auto& [name, rule] : shape.items()) {
    if (rule.at("required").get<bool>()) {
      EXPECT_TRUE(object.contains(name)) << where << ": the required " << name << " is missing";
    }
  }
}

json SpdkFragment(const ExportValues& values) {
  auto text = FormatExport(ExportFormat::kSpdk, values);
  if (!text) ADD_FAILURE() << text.error().message;
  return text ? json::parse(*text) : json();
}

std::vector<json> RpcRequests(const ExportValues& values) {
  auto text = FormatExport(ExportFormat::kSpdkRpc, values);
  if (!text) ADD_FAILURE() << text.error().message;
  std::vector<json> requests;
  std::istringstream in(text ? *text : "");
  for (std::string line; std::getline(in, line);) requests.push_back(json::parse(line));
  return requests;
}

TEST(ExportSpdk, ConfigFragmentHasOnlyDocumentedParamsOfTheirTypes) {
  const json doc = Fixture("sock_impl_set_options.json");
  for (const ExportValues& values : AllVerdicts()) {
    const json fragment = SpdkFragment(values);
    ASSERT_TRUE(fragment.is_object());
    EXPECT_EQ(fragment.size(), 2u) << "subsystem and config only: " << fragment.dump();
    EXPECT_EQ(fragment.at("subsystem"), "sock");
    ASSERT_TRUE(fragment.at("config").is_array());
    ASSERT_EQ(fragment.at("config").size(), 2u);
    for (const json& call : fragment.at("config")) {
      EXPECT_EQ(call.size(), 2u) << "method and params only: " << call.dump();
      EXPECT_EQ(call.at("method"), doc.at("method"));
      ExpectDocumented(call.at("params"), doc.at("params"), call.dump());
    }
  }
}

TEST(ExportSpdk, RpcRequestsAreJsonRpcWithDocumentedParams) {
  const json doc = Fixture("sock_impl_set_options.json");
  for (const ExportValues& values : AllVerdicts()) {
    const std::vector<json> requests = RpcRequests(values);
    ASSERT_EQ(requests.size(), 2u);
    for (const json& request : requests) {
      ExpectDocumented(request, doc.at("request"), request.dump());
      EXPECT_EQ(request.at("method"), doc.at("method"));
      ExpectDocumented(request.at("params"), doc.at("params"), request.dump());
    }
  }
}

TEST(ExportSpdk, RpcParamsAreTheConfigParams) {
  for (const ExportValues& values : AllVerdicts()) {
    const json fragment = SpdkFragment(values);
    const std::vector<json> requests = RpcRequests(values);
    ASSERT_EQ(requests.size(), 2u);
    for (std::size_t i = 0; i < requests.size(); ++i)
      EXPECT_EQ(requests.at(i).at("params"), fragment.at("config").at(i).at("params"));
  }
}

TEST(ExportSpdk, AThresholdBeyondUint32TurnsZerocopyOff) {
  // SPDK reads zerocopy_threshold as uint32 and refuses the whole call for a
  // larger number; no flush is that large, so the answer is zerocopy off.
  const json doc = Fixture("sock_impl_set_options.json");
  const json beyond = SpdkFragment(Values(calibrator::Verdict::kThreshold, std::uint64_t{1} << 32));
  ASSERT_EQ(beyond.at("config").size(), 2u);
  for (const json& call : beyond.at("config")) {
    const json& params = call.at("params");
    ExpectDocumented(params, doc.at("params"), params.dump());
    EXPECT_EQ(params.at("enable_zerocopy_send_server"), false);
    EXPECT_EQ(params.at("enable_zerocopy_send_client"), false);
    EXPECT_FALSE(params.contains("zerocopy_threshold"));
  }
  const json largest = SpdkFragment(Values(calibrator::Verdict::kThreshold, UINT32_MAX));
  for (const json& call : largest.at("config")) {
    EXPECT_EQ(call.at("params").at("zerocopy_threshold"), UINT32_MAX)
        << "the largest uint32 is still sent";
    EXPECT_EQ(call.at("params").at("enable_zerocopy_send_client"), true);
  }
}

// SPDK's uring module submits sendmsg with MSG_ZEROCOPY through io_uring
// and reaps the socket's error queue (module/sock/uring/uring.c): it pays
// MSG_ZEROCOPY's costs, not those of io_uring's SEND_ZC, so both modules
// take msg_zerocopy's threshold and the export needs no io_uring method.
TEST(ExportSpdk, BothModulesTakeMsgZerocopysThreshold) {
  const json fragment = SpdkFragment(Values(calibrator::Verdict::kThreshold, 16384));
  ASSERT_EQ(fragment.at("config").size(), 2u);
  EXPECT_EQ(fragment.at("config").at(0).at("params").at("impl_name"), "posix");
  EXPECT_EQ(fragment.at("config").at(1).at("params").at("impl_name"), "uring");
  for (const json& call : fragment.at("config"))
    EXPECT_EQ(call.at("params").at("zerocopy_threshold"), 16384);
  const ExportFormat spdk[] = {ExportFormat::kSpdk};
  const auto plan = PlanExport(spdk, {});
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->methods, std::vector<calibrator::Method>{calibrator::Method::kMsgZerocopy});
}

// The fragment takes the place of the documented config's sock subsystem,
// and the result keeps SPDK's config shape: {"subsystems": [{"subsystem",
// "config": [{"method", "params"}]}]}.
TEST(ExportSpdk, FragmentComposesIntoADocumentedConfig) {
  json config = Fixture("config.json");
  const json fragment = SpdkFragment(AllVerdicts().at(0));
  auto& subsystems = config["subsystems"];
  ASSERT_TRUE(subsystems.is_array());
  bool replaced = false;
  for (json& subsystem : subsystems) {
    if (subsystem["subsystem"] != "sock") continue;
    subsystem = fragment;
    replaced = true;
  }
  ASSERT_TRUE(replaced) << "the fixture has a sock subsystem";
  // Round trip through text, as spdk_tgt --json reads a file.
  const json read = json::parse(config.dump(2));
  ASSERT_EQ(read.size(), 1u);
  ASSERT_TRUE(read.at("subsystems").is_array());
  int socks = 0;
  for (const json& subsystem : read.at("subsystems")) {
    EXPECT_EQ(subsystem.size(), 2u) << subsystem.dump();
    EXPECT_TRUE(subsystem.at("subsystem").is_string());
    ASSERT_TRUE(subsystem.at("config").is_array());
    for (const json& call : subsystem.at("config")) {
      EXPECT_TRUE(call.at("method").is_string()) << call.dump();
      EXPECT_TRUE(call.at("params").is_object()) << call.dump();
    }
    if (subsystem.at("subsystem") == "sock") {
      ++socks;
      EXPECT_EQ(subsystem.at("config").at(0).at("params").at("impl_name"), "posix");
      EXPECT_EQ(subsystem.at("config").at(0).at("params").at("zerocopy_threshold"), 16384);
      EXPECT_EQ(subsystem.at("config").at(1).at("params").at("impl_name"), "uring");
    }
  }
  EXPECT_EQ(socks, 1);
  EXPECT_EQ(read.at("subsystems").at(0).at("subsystem"), "sock")
      << "sock stays first, before the subsystems that create sockets";
}

TEST(ExportSpdk, TheCheckerRejectsWhatSpdkWouldRefuse) {
  // The checks above can fail: an unknown member, a negative or too large
  // threshold, a switch written as a string, and a missing impl_name.
  const json params = Fixture("sock_impl_set_options.json").at("params");
  auto type_of = [&](const char* name) { return params.at(name).at("type").get<std::string>(); };
  EXPECT_FALSE(params.contains("zerocopy_size"));
  EXPECT_FALSE(HasType(json(-1), type_of("zerocopy_threshold")));
  EXPECT_FALSE(HasType(json(std::uint64_t{1} << 32), type_of("zerocopy_threshold")));
  EXPECT_FALSE(HasType(json("true"), type_of("enable_zerocopy_send_server")));
  EXPECT_TRUE(HasType(json(16384), type_of("zerocopy_threshold")));
  EXPECT_TRUE(params.at("impl_name").at("required").get<bool>());
}

}  // namespace
}  // namespace zcal::agent::export_spdk_test
