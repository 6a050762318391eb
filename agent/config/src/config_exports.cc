// The `exports:` section: the files the agent keeps current in a consumer's
// format (docs/export.md, "Files the agent keeps current"), read by
// config.cc's ParseConfig. Each entry is checked as `zcal export` checks
// its options, so that an entry --check-config accepts can be produced.
#include <net/if.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "config_sections.h"
#include "zcal/common/address.h"
#include "zcal/common/units.h"

namespace zcal::agent {

namespace {

// The directory a file path names, "/" for a file at the root.
std::string Parent(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

void ReadPath(ConfigReader& reader, const YAML::Node& node, const std::string& key,
              ExportConfig& out) {
  std::string path;
  if (!reader.String(node, key, path)) return;
  if (path.empty() || path.front() != '/' || path.back() == '/') {
    reader.Error(node, key,
                 "'" + path + "' is not an absolute file path; write one such as "
                 "/run/zcal/fabric.env");
    return;
  }
  struct stat st {};
  const std::string parent = Parent(path);
  if (stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    reader.Error(node, key,
                 "the directory " + parent + " of '" + path +
                     "' does not exist; create it (the agent does not) or "
                     "write another path");
    return;
  }
  out.path = path;
}

// for, interface or scope: the key of the entry, as zcal export's --for,
// --interface and --scope.
void ReadKey(ConfigReader& reader, const Fields& fields,
             const YAML::Node& entry, const std::string& key, ExportConfig& out) {
  int given = 0;
  for (const char* name : {"for", "interface", "scope"}) given += fields.contains(name) ? 1 : 0;
  if (given != 1) {
    reader.Error(entry, key,
                 std::string(given == 0 ? "names no key" : "names more than one key") +
                     "; write exactly one of for: ADDRESS, interface: NAME or "
                     "scope: host_default|loopback");
    return;
  }
  if (const auto it_for = fields.find("for"); it_for != fields.end()) {
    std::string text;
    if (!reader.String(it_for->second, key + ".for", text)) return;
    if (!common::ParseIpAddress(text)) {
      reader.Error(it_for->second, key + ".for",
                   "'" + text + "' is not a numeric IPv4 or IPv6 address");
      return;
    }
    out.for_address = text;
  } else if (const auto it_if = fields.find("interface"); it_if != fields.end()) {
    std::string text;
    if (!reader.String(it_if->second, key + ".interface", text)) return;
    if (text.empty() || text.size() >= IF_NAMESIZE) {
      reader.Error(it_if->second, key + ".interface",
                   "'" + text + "' is not an interface name (1 to " +
                       std::to_string(IF_NAMESIZE - 1) + " bytes)");
      return;
    }
    out.interface = text;
  } else if (const auto it_scope = fields.find("scope"); it_scope != fields.end()) {
    std::string text;
    if (!reader.String(it_scope->second, key + ".scope", text)) return;
    if (text != "host_default" && text != "loopback") {
      reader.Error(it_scope->second, key + ".scope",
                   "unknown scope '" + text + "'; allowed: host_default, loopback");
      return;
    }
    out.scope = text;
  }
}

// methods: a list of zerocopy method names, as zcal export's --methods, that
// the entry's format can write.
bool ReadMethods(ConfigReader& reader, const YAML::Node& node, const std::string& key,
                 ExportConfig& out) {
  if (!reader.ExpectSequence(node, key)) return false;
  std::string list;
  for (std::size_t i = 0; i < node.size(); ++i) {
    std::string name;
    if (!reader.String(node[i], key + "[" + std::to_string(i) + "]", name)) return false;
    list += (i == 0 ? "" : ",") + name;
  }
  // The messages start with the key already.
  auto methods = ParseExportMethods(list, key);
  if (!methods) {
    reader.Error(node, "", methods.error().message);
    return false;
  }
  const ExportFormat formats[] = {out.format};
  if (auto plan = PlanExport(formats, *methods, key); !plan) {
    reader.Error(node, "", plan.error().message);
    return false;
  }
  out.methods = std::move(*methods);
  return true;
}

// depth: as zcal export's --depth, a class or a number of sends in flight.
bool ReadDepth(ConfigReader& reader, const YAML::Node& node, const std::string& key,
               ExportConfig& out) {
  std::string text;
  if (!reader.String(node, key, text)) return false;
  auto depth = ParseExportDepth(text, key);
  if (!depth) {
    // The message starts with the key already.
    reader.Error(node, "", depth.error().message);
    return false;
  }
  out.depth = std::move(*depth);
  return true;
}

// A key every export must have: false, with an error at the entry, when it
// is not written.
bool Required(ConfigReader& reader, const Fields& fields, const YAML::Node& entry,
              const std::string& key, const char* name, const char* what) {
  if (fields.contains(name)) return true;
  reader.Error(entry, key, std::string("has no ") + name + "; write " + what);
  return false;
}

bool ReadFormat(ConfigReader& reader, const YAML::Node& value, const std::string& key,
                ExportConfig& out) {
  std::string text;
  if (!reader.String(value, key, text)) return false;
  const Result<ExportFormat> format = ParseExportFormat(text);
  if (!format) {
    reader.Error(value, key, format.error().message);
    return false;
  }
  out.format = *format;
  return true;
}

bool ReadFallback(ConfigReader& reader, const YAML::Node& value, const std::string& key,
                  ExportConfig& out) {
  std::string text;
  if (!reader.String(value, key, text)) return false;
  if (text != "never" && text != "always" && !common::ParseSize(text)) {
    reader.Error(value, key,
                 "'" + text + "' is not never, always or a size in bytes (16384, 16KiB)");
    return false;
  }
  out.fallback = text;
  return true;
}

// exports[i]: nullopt when any of its keys is wrong (each reported).
std::optional<ExportConfig> ReadExport(ConfigReader& reader, const YAML::Node& entry,
                                       const std::string& key, const Fields& fields) {
  ExportConfig e;
  bool ok = true;
  bool format_ok = false;  // methods are checked against a known format only
  if (Required(reader, fields, entry, key, "format",
               "one of env, json, libfabric, spdk, spdk-rpc")) {
    format_ok = ReadFormat(reader, fields.at("format"), key + ".format", e);
  }
  ok = format_ok;
  if (Required(reader, fields, entry, key, "path", "an absolute file path")) {
    ReadPath(reader, fields.at("path"), key + ".path", e);
    ok = ok && !e.path.empty();
  } else {
    ok = false;
  }
  ReadKey(reader, fields, entry, key, e);
  ok = ok && !(e.for_address.empty() && e.interface.empty() && e.scope.empty());
  if (const auto it = fields.find("fallback"); it != fields.end())
    ok = ReadFallback(reader, it->second, key + ".fallback", e) && ok;
  if (const auto it = fields.find("methods"); it != fields.end() && format_ok)
    ok = ReadMethods(reader, it->second, key + ".methods", e) && ok;
  if (const auto it = fields.find("depth"); it != fields.end())
    ok = ReadDepth(reader, it->second, key + ".depth", e) && ok;
  if (const auto it = fields.find("strict_depth"); it != fields.end())
    ok = reader.Bool(it->second, key + ".strict_depth", e.strict_depth) && ok;
  if (!ok) return std::nullopt;
  return e;
}

}  // namespace

void ReadExports(ConfigReader& reader, const YAML::Node& node, Config& config) {
  config.exports.clear();
  if (node.IsNull()) return;
  if (!reader.ExpectSequence(node, "exports")) return;
  static constexpr std::array<std::string_view, 9> kKeys = {
      "format", "path", "for", "interface", "scope", "fallback", "methods", "depth",
      "strict_depth"};
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string key = "exports[" + std::to_string(i) + "]";
    const auto fields = reader.Map(node[i], key, kKeys);
    if (!fields) continue;
    std::optional<ExportConfig> e = ReadExport(reader, node[i], key, *fields);
    if (!e) continue;
    const bool twice = std::any_of(config.exports.begin(), config.exports.end(),
                                   [&](const ExportConfig& o) { return o.path == e->path; });
    if (twice) {
      reader.Error(fields->at("path"), key + ".path",
                   "'" + e->path + "' is the path of an earlier export; each file has one export");
      continue;
    }
    config.exports.push_back(std::move(*e));
  }
}

}  // namespace zcal::agent
