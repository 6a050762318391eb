#include "zcal/agent/domain/export_formats.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <utility>

#include "zcal/calibrator/depth.h"

namespace zcal::agent {

namespace {

using calibrator::Method;

constexpr std::pair<std::string_view, ExportFormat> kNames[] = {
    {"env", ExportFormat::kEnv},     {"json", ExportFormat::kJson},
    {"libfabric", ExportFormat::kLibfabric}, {"spdk", ExportFormat::kSpdk},
    {"spdk-rpc", ExportFormat::kSpdkRpc},
};

constexpr std::array<Method, 1> kMsgZerocopyOnly = {Method::kMsgZerocopy};

bool Has(std::span<const Method> methods, Method m) {
  return std::find(methods.begin(), methods.end(), m) != methods.end();
}

// Adds `m` keeping kZerocopyMethods' order.
void Insert(std::vector<Method>& methods, Method m) {
  if (Has(methods, m)) return;
  methods.push_back(m);
  std::sort(methods.begin(), methods.end());
}

std::string Names(std::span<const Method> methods) {
  std::string out;
  for (std::size_t i = 0; i < methods.size(); ++i)
    out += (i == 0 ? "" : i + 1 == methods.size() ? " and " : ", ") +
           std::string(calibrator::MethodName(methods[i]));
  return out;
}

bool RequiresItsMethods(ExportFormat format) { return format != ExportFormat::kEnv; }

// Sends in flight a class stands for, stream as the deepest.
std::uint32_t InFlight(DepthClass depth) {
  return depth == DepthClass::kStream ? calibrator::kMaxDepth + 1
                                      : static_cast<std::uint32_t>(depth);
}

}  // namespace

Result<ExportFormat> ParseExportFormat(std::string_view text) {
  for (const auto& [name, format] : kNames)
    if (name == text) return format;
  return Fail(Errc::kInvalidArgument,
              "unknown format \"" + std::string(text) +
                  "\": the formats are env, json, libfabric, spdk and spdk-rpc");
}

std::string_view ExportFormatName(ExportFormat format) {
  for (const auto& [name, f] : kNames)
    if (f == format) return name;
  return "unknown";
}

std::span<const Method> ExportFormatMethods(ExportFormat format) {
  switch (format) {
    case ExportFormat::kLibfabric:
    case ExportFormat::kSpdk:
    case ExportFormat::kSpdkRpc:
      return kMsgZerocopyOnly;
    case ExportFormat::kEnv:
    case ExportFormat::kJson:
      break;
  }
  return calibrator::kZerocopyMethods;
}

DepthClass ExportFormatDefaultDepth(ExportFormat format) {
  switch (format) {
    case ExportFormat::kEnv:
    case ExportFormat::kJson:
    case ExportFormat::kLibfabric:
    case ExportFormat::kSpdk:
    case ExportFormat::kSpdkRpc:
      break;
  }
  return DepthClass::kStream;
}

Result<ExportDepth> ParseExportDepth(std::string_view text, std::string_view option) {
  const Result<std::uint32_t> depth = calibrator::ParseDepth(text);
  if (!depth) {
    // The calibrator's sentence starts with "depth: "; the user wrote `option`.
    std::string message = depth.error().message;
    constexpr std::string_view kPrefix = "depth: ";
    if (message.starts_with(kPrefix)) message.erase(0, kPrefix.size());
    return Fail(Errc::kInvalidArgument, std::string(option) + ": " + message);
  }
  if (*depth == calibrator::kStreamDepth) return ExportDepth{DepthClass::kStream, "stream"};
  // The published classes, ordered as ParseDepthClasses returns them, so
  // that ClassOf applies libzcal's zcal_depth_class rule.
  std::vector<std::uint32_t> classes;
  for (DepthClass c : kDepthClasses) classes.push_back(static_cast<std::uint32_t>(c));
  const std::uint32_t code = calibrator::ClassOf(*depth, classes);
  return ExportDepth{static_cast<DepthClass>(code), std::string(text)};
}

Result<std::vector<Method>> ParseExportMethods(std::string_view list, std::string_view option) {
  const std::string all = Names(calibrator::kZerocopyMethods);
  const std::string what = std::string(option);
  if (list.empty())
    return Fail(Errc::kInvalidArgument, what + " names no method; write a comma-separated list of " + all);
  std::vector<Method> methods;
  for (std::size_t start = 0; start <= list.size();) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view name = list.substr(start, comma - start);
    start = comma + 1;
    const std::optional<Method> m = calibrator::ParseMethod(name);
    if (!m || !calibrator::IsZerocopy(*m))
      return Fail(Errc::kInvalidArgument, what + ": \"" + std::string(name) +
                                              "\" is not a zerocopy method; the methods are " + all);
    if (Has(methods, *m))
      return Fail(Errc::kInvalidArgument,
                  what + " names " + std::string(name) + " twice; name each method once");
    Insert(methods, *m);
  }
  return methods;
}

Result<ExportPlan> PlanExport(std::span<const ExportFormat> formats, std::span<const Method> named,
                              std::string_view option, const std::optional<ExportDepth>& depth) {
  ExportPlan plan;
  if (depth) {
    plan.depth = depth->depth_class;
    plan.depth_asked = depth->asked;
  } else {
    bool first = true;
    for (ExportFormat f : formats) {
      const DepthClass d = ExportFormatDefaultDepth(f);
      if (first || InFlight(d) < InFlight(plan.depth)) plan.depth = d;
      first = false;
    }
  }
  if (named.empty()) {
    for (ExportFormat f : formats)
      for (Method m : ExportFormatMethods(f)) {
        Insert(plan.methods, m);
        if (RequiresItsMethods(f)) Insert(plan.required, m);
      }
    return plan;
  }
  const std::string what = std::string(option) + " " + Names(named);
  for (ExportFormat f : formats) {
    const auto writes = ExportFormatMethods(f);
    if (std::none_of(named.begin(), named.end(), [&](Method m) { return Has(writes, m); }))
      return Fail(Errc::kInvalidArgument,
                  what + " leaves out what format " + std::string(ExportFormatName(f)) +
                      " writes (" + Names(writes) + "); name it" +
                      (formats.size() > 1 ? ", or leave that format out" : ""));
  }
  for (Method m : named) {
    const bool written = std::any_of(formats.begin(), formats.end(), [&](ExportFormat f) {
      return Has(ExportFormatMethods(f), m);
    });
    if (!written) {
      std::string names;
      for (ExportFormat f : formats)
        names += (names.empty() ? "" : " and ") + std::string(ExportFormatName(f));
      return Fail(Errc::kInvalidArgument,
                  std::string(option) + " names " + std::string(calibrator::MethodName(m)) +
                      ", which format " + names + (formats.size() > 1 ? " do" : " does") +
                      " not write (only env and json write every method); leave it out");
    }
    Insert(plan.methods, m);
    Insert(plan.required, m);
  }
  return plan;
}

}  // namespace zcal::agent
