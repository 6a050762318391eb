#include "zcal/agent/report/export_format.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "zcal/common/clock.h"
#include "zcal/common/units.h"

namespace zcal::agent {

using calibrator::Method;
using calibrator::MethodName;
using calibrator::Verdict;

namespace {

std::string Upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string IsoUtc(std::uint64_t ns) {
  return common::FormatUtc(ns, "%Y-%m-%dT%H:%M:%SZ", "none");
}

const ExportedMethod* Find(const ExportValues& values, Method method) {
  for (const ExportedMethod& m : values.methods)
    if (m.method == method) return &m;
  return nullptr;
}

// Characters that mean the same unquoted to sh and to systemd.
bool Plain(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
         c == '.' || c == ':' || c == '/' || c == '+' || c == '@' || c == '%' ||
         c == ',';
}

std::string Quoted(std::string_view value) {
  if (!value.empty() && std::all_of(value.begin(), value.end(), Plain))
    return std::string(value);
  // Single quotes: literal in sh and in systemd alike. A quote, a backslash
  // or a control character inside would read differently in the two, and
  // only an interface name could hold one: replaced.
  std::string out = "'";
  for (char c : value) {
    const bool odd = c == '\'' || c == '\\' || std::iscntrl(static_cast<unsigned char>(c));
    out += odd ? '?' : c;
  }
  return out + "'";
}

// One sock_impl_set_options params object, with SPDK's semantics: a never
// verdict turns zerocopy send off, a threshold turns it on from that size
// (0 = every size, SPDK's own default). SPDK decodes zerocopy_threshold as
// uint32 and refuses the whole call for a larger number; no flush reaches
// 4 GiB, so such a threshold means what never means.
nlohmann::json SpdkParams(std::string_view impl, const ExportedMethod& m) {
  const bool on = m.verdict == Verdict::kAlways ||
                  (m.verdict == Verdict::kThreshold && m.threshold_bytes <= UINT32_MAX);
  nlohmann::json params = {{"impl_name", impl},
                           {"enable_zerocopy_send_server", on},
                           {"enable_zerocopy_send_client", on}};
  if (on) params["zerocopy_threshold"] = m.verdict == Verdict::kAlways ? 0 : m.threshold_bytes;
  return params;
}

// "4", or "8 (class 4)" when --depth named a depth within a class.
std::string DepthText(const ExportValues& values) {
  const std::string name(DepthClassName(values.depth));
  return values.depth_asked.empty() || values.depth_asked == name
             ? name
             : values.depth_asked + " (class " + name + ")";
}

// The first line of env and libfabric: what was asked and what stands in.
std::string Comment(ExportFormat format, const ExportValues& values) {
  std::string out = "zcal export --format " + std::string(ExportFormatName(format)) +
                    ": segment " + values.segment + ", for " + values.key;
  if (!values.depth_asked.empty() || values.depth != DepthClass::kStream)
    out += ", depth " + DepthText(values);
  if (const std::string fell = values.DepthFallbackNames(); !fell.empty())
    out += ", stream entry for " + fell;
  if (values.stale) out += ", stale";
  if (values.any_fallback()) out += ", with fallback values";
  if (const std::string missing = values.MissingNames(); !missing.empty())
    out += ", missing " + missing;
  return out;
}

std::string StatusText(const ExportedMethod& m) {
  switch (m.source) {
    case ExportSource::kFallback:
      return "fallback";
    case ExportSource::kMissing:
      return "missing";
    case ExportSource::kSegment:
      break;
  }
  return "segment";
}

// The method a format writes, refused when it has no value: only env marks
// a missing method (its consumer may not read it); the others are read
// whole by a consumer that would take an absent value for its default.
Result<const ExportedMethod*> Needed(const ExportValues& values, Method method,
                                     ExportFormat format) {
  const ExportedMethod* m = Find(values, method);
  if (m == nullptr || m->missing())
    return Fail(m == nullptr ? Errc::kInvalidArgument : Errc::kNotFound,
                "no usable value for " + std::string(MethodName(method)) + ", which " +
                    std::string(ExportFormatName(format)) + " reads");
  return m;
}

// Both of SPDK's modules send with MSG_ZEROCOPY (export_formats.h): the
// uring module's sendmsg carries that flag and its completions come from
// the socket's error queue, so msg_zerocopy's threshold is the one both
// pay for.
Result<std::vector<std::pair<std::string_view, const ExportedMethod*>>> SpdkModules(
    const ExportValues& values, ExportFormat format) {
  auto m = Needed(values, Method::kMsgZerocopy, format);
  if (!m) return tl::unexpected(m.error());
  return std::vector<std::pair<std::string_view, const ExportedMethod*>>{{"posix", *m},
                                                                          {"uring", *m}};
}

}  // namespace

Result<ExportFallback> ParseExportFallback(std::string_view text) {
  if (text == "never") return ExportFallback{Verdict::kNever, 0};
  if (text == "always") return ExportFallback{Verdict::kAlways, 0};
  Result<std::uint64_t> bytes = common::ParseSize(text);
  if (!bytes)
    return Fail(Errc::kInvalidArgument,
                "--fallback \"" + std::string(text) +
                    "\" is not never, always or a size in bytes (16384, 16KiB)");
  return ExportFallback{Verdict::kThreshold, *bytes};
}

bool ExportValues::any_fallback() const {
  return std::any_of(methods.begin(), methods.end(),
                     [](const ExportedMethod& m) { return m.fallback(); });
}

std::string ExportValues::MissingNames() const {
  std::string out;
  for (const ExportedMethod& m : methods)
    if (m.missing()) out += (out.empty() ? "" : ",") + std::string(MethodName(m.method));
  return out;
}

std::string ExportValues::DepthFallbackNames() const {
  std::string out;
  for (const ExportedMethod& m : methods)
    if (m.depth_fallback)
      out += (out.empty() ? "" : ",") + std::string(MethodName(m.method));
  return out;
}

std::string ThresholdText(const ExportedMethod& m) {
  if (m.missing()) return "";
  if (m.verdict == Verdict::kNever) return "never";
  if (m.verdict == Verdict::kAlways) return "always";
  return std::to_string(m.threshold_bytes);
}

Result<std::vector<std::pair<std::string, std::string>>> ExportVariables(
    ExportFormat format, const ExportValues& values) {
  std::vector<std::pair<std::string, std::string>> vars;
  if (format == ExportFormat::kLibfabric) {
    auto needed = Needed(values, Method::kMsgZerocopy, format);
    if (!needed) return tl::unexpected(needed.error());
    const ExportedMethod* m = *needed;
    // libfabric's semantics: sizes >= the value go zerocopy, -1 is off.
    const std::string size = m->verdict == Verdict::kNever    ? "-1"
                             : m->verdict == Verdict::kAlways ? "0"
                                                                 : std::to_string(m->threshold_bytes);
    const std::string source = values.any_fallback() ? "fallback" : "segment";
    return std::vector<std::pair<std::string, std::string>>{
        {"FI_TCP_ZEROCOPY_SIZE", size},
        {"FI_NET_ZEROCOPY_SIZE", size},
        {"ZCAL_SOURCE", source},
        {"ZCAL_DEPTH", std::string(DepthClassName(values.depth))},
        {"ZCAL_DEPTH_FALLBACK", values.DepthFallbackNames()}};
  }
  if (format != ExportFormat::kEnv)
    return Fail(Errc::kInvalidArgument, "format " + std::string(ExportFormatName(format)) +
                                            " sets no environment variables");
  for (const ExportedMethod& m : values.methods) {
    const std::string prefix = "ZCAL_" + Upper(MethodName(m.method));
    vars.emplace_back(prefix + "_THRESHOLD", ThresholdText(m));
    vars.emplace_back(prefix + "_STATUS", StatusText(m));
    vars.emplace_back(prefix + "_REASON", m.why);
    vars.emplace_back(prefix + "_SCOPE", m.scope);
    vars.emplace_back(prefix + "_ESTIMATED", m.estimated ? "1" : "0");
    vars.emplace_back(prefix + "_MEASURED_AT", IsoUtc(m.measured_at_ns));
    vars.emplace_back(prefix + "_DEPTH",
                      m.source == ExportSource::kSegment ? DepthClassName(m.depth) : "");
    vars.emplace_back(prefix + "_DEPTH_FALLBACK", m.depth_fallback ? "1" : "0");
  }
  vars.emplace_back("ZCAL_SOURCE", values.any_fallback() ? "fallback" : "segment");
  vars.emplace_back("ZCAL_MISSING", values.MissingNames());
  vars.emplace_back("ZCAL_STALE", values.stale ? "1" : "0");
  vars.emplace_back("ZCAL_DEPTH", std::string(DepthClassName(values.depth)));
  vars.emplace_back("ZCAL_DEPTH_FALLBACK", values.DepthFallbackNames());
  vars.emplace_back("ZCAL_SEGMENT", values.segment);
  return vars;
}

std::string EnvFileText(const std::vector<std::pair<std::string, std::string>>& variables,
                        std::string_view comment) {
  std::string out = "# " + std::string(comment) + "\n";
  for (const auto& [name, value] : variables) out += name + "=" + Quoted(value) + "\n";
  return out;
}

namespace {

// SPDK's JSON config: one sock_impl_set_options per module.
Result<std::string> SpdkConfigText(const ExportValues& values, ExportFormat format) {
  auto modules = SpdkModules(values, format);
  if (!modules) return tl::unexpected(modules.error());
  nlohmann::json config = nlohmann::json::array();
  for (const auto& [impl, m] : *modules)
    config.push_back({{"method", "sock_impl_set_options"}, {"params", SpdkParams(impl, *m)}});
  return nlohmann::json{{"subsystem", "sock"}, {"config", std::move(config)}}.dump(2) + "\n";
}

// One request a line, ids from 1: what a script pipes to the RPC socket.
Result<std::string> SpdkRpcText(const ExportValues& values, ExportFormat format) {
  auto modules = SpdkModules(values, format);
  if (!modules) return tl::unexpected(modules.error());
  std::string out;
  int id = 1;
  for (const auto& [impl, m] : *modules)
    out += nlohmann::json{{"jsonrpc", "2.0"},
                          {"method", "sock_impl_set_options"},
                          {"id", id++},
                          {"params", SpdkParams(impl, *m)}}
               .dump() +
           "\n";
  return out;
}

nlohmann::json MethodJson(const ExportedMethod& m) {
  return {{"verdict", calibrator::VerdictName(m.verdict)},
          {"threshold_bytes", m.verdict == Verdict::kThreshold
                                  ? nlohmann::json(m.threshold_bytes)
                                  : nlohmann::json(nullptr)},
          {"scope", m.scope},
          {"estimated", m.estimated},
          {"measured_at_ns",
           m.fallback() ? nlohmann::json(nullptr) : nlohmann::json(m.measured_at_ns)},
          {"depth",
           m.fallback() ? nlohmann::json(nullptr) : nlohmann::json(DepthClassName(m.depth))},
          {"depth_fallback", m.depth_fallback}};
}

// zcal show --json's document (or the segment's name without one) with the
// export's values under "export".
Result<std::string> JsonText(const ExportValues& values, ExportFormat format,
                             const nlohmann::json& show) {
  nlohmann::json doc = show.is_object() ? show : nlohmann::json{{"segment", values.segment}};
  nlohmann::json methods = nlohmann::json::object();
  for (const ExportedMethod& m : values.methods) {
    if (auto needed = Needed(values, m.method, format); !needed)
      return tl::unexpected(needed.error());
    methods[std::string(MethodName(m.method))] = MethodJson(m);
  }
  doc["export"] = {{"key", values.key},
                   {"depth", DepthClassName(values.depth)},
                   {"depth_fallback", !values.DepthFallbackNames().empty()},
                   {"stale", values.stale},
                   {"source", values.any_fallback() ? "fallback" : "segment"},
                   {"methods", std::move(methods)}};
  return doc.dump(2) + "\n";
}

}  // namespace

Result<std::string> FormatExport(ExportFormat format, const ExportValues& values,
                                 const nlohmann::json& show) {
  switch (format) {
    case ExportFormat::kEnv:
    case ExportFormat::kLibfabric: {
      auto vars = ExportVariables(format, values);
      if (!vars) return tl::unexpected(vars.error());
      return EnvFileText(*vars, Comment(format, values));
    }
    case ExportFormat::kSpdk:
      return SpdkConfigText(values, format);
    case ExportFormat::kSpdkRpc:
      return SpdkRpcText(values, format);
    case ExportFormat::kJson:
      return JsonText(values, format, show);
  }
  return Fail(Errc::kInvalidArgument, "unknown format");
}

}  // namespace zcal::agent
