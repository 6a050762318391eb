#include "zcal/agent/report/export_select.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>

#include "zcal/agent/report/segment_table.h"
#include "zcal/common/clock.h"
#include "zcal/zcal.h"

namespace zcal::agent {

namespace {

struct HandleCloser {
  void operator()(zcal_handle* h) const { zcal_close(h); }
};
using Handle = std::unique_ptr<zcal_handle, HandleCloser>;

std::string SegmentName(const std::string& given) {
  const char* env = std::getenv(ZCAL_SEGMENT_ENV);
  return !given.empty() ? given : (env && *env) ? std::string(env) : std::string(ZCAL_DEFAULT_SEGMENT);
}

struct Key {
  zcal_key key{};
  std::string text;  // for messages and the output's comment
};

Result<Key> MakeKey(const ExportKeyArgs& args) {
  Key k;
  if (!args.for_address.empty()) {
    if (zcal_key_from_string(args.for_address.c_str(), nullptr, &k.key) != 0)
      return Fail(Errc::kInvalidArgument, "--for \"" + args.for_address +
                                              "\" is not a numeric IPv4 or IPv6 address");
    k.text = args.for_address;
  } else if (!args.interface.empty()) {
    if (zcal_key_from_string(nullptr, args.interface.c_str(), &k.key) != 0)
      return Fail(Errc::kInvalidArgument,
                  "--interface \"" + args.interface + "\" is longer than an interface name (" +
                      std::to_string(ZCAL_IFNAME_SIZE - 1) + " bytes)");
    k.text = "interface:" + args.interface;
  } else if (args.scope.empty() || args.scope == "host_default") {
    k.text = "host_default";  // a key without address or interface
  } else if (args.scope == "loopback") {
    zcal_key_from_string("127.0.0.1", nullptr, &k.key);
    k.text = "loopback";
  } else {
    return Fail(Errc::kInvalidArgument,
                "--scope \"" + args.scope + "\" is not host_default or loopback");
  }
  return k;
}

bool PrefixMatches(const zcal_shm_entry& e, const zcal_key& key) {
  if (e.family != key.family) return false;
  const unsigned bits = e.prefix_len;
  for (unsigned i = 0; i < 16 && i * 8 < bits; ++i) {
    const unsigned take = bits - i * 8 >= 8 ? 8 : bits - i * 8;
    const std::uint8_t mask = static_cast<std::uint8_t>(0xff00u >> take);
    if ((e.address[i] & mask) != (key.address[i] & mask)) return false;
  }
  return true;
}

// "peer:10.1.0.0/16", "interface:eth0", "host_default", "loopback": the
// entry the lookup answered with, found in the same table.
std::string ScopeOf(const zcal_result& r, const Key& k, const SegmentTable& table) {
  for (const zcal_shm_entry& e : table.entries) {
    if (e.method != r.method || e.scope != r.scope) continue;
    if (e.scope == ZCAL_SCOPE_PEER && (e.prefix_len != r.prefix_len || !PrefixMatches(e, k.key)))
      continue;
    if (e.scope == ZCAL_SCOPE_INTERFACE &&
        std::strncmp(e.interface, k.key.interface, ZCAL_IFNAME_SIZE) != 0)
      continue;
    std::string text = ScopeText(e);
    for (char& c : text)
      if (c == ' ') c = ':';
    return text;
  }
  return zcal_scope_name(r.scope);
}

std::string MethodList(const std::vector<calibrator::Method>& methods) {
  std::string out;
  for (calibrator::Method m : methods)
    out += (out.empty() ? "" : ", ") + std::string(calibrator::MethodName(m));
  return out;
}

void UseFallback(ExportedMethod& e, const ExportFallback& fallback) {
  e.source = ExportSource::kFallback;
  e.verdict = fallback.verdict;
  e.threshold_bytes = fallback.threshold_bytes;
  e.scope = "fallback";
}

Result<ExportSelection> AllFallback(ExportSelection selection, const ExportFallback& fallback,
                                    const ExportPlan& plan, std::string_view why) {
  for (calibrator::Method m : plan.methods) {
    ExportedMethod e;
    e.method = static_cast<std::uint8_t>(m);
    e.why = why;
    UseFallback(e, fallback);
    selection.values.methods.push_back(std::move(e));
  }
  return selection;
}

bool Contains(const std::vector<calibrator::Method>& methods, calibrator::Method m) {
  return std::find(methods.begin(), methods.end(), m) != methods.end();
}

std::string OpenError(int rc, const std::string& name) {
  const std::string detail = zcal_error_detail();
  switch (-rc) {
    case ENOENT:
      return "no segment " + name + " (/dev/shm" + name +
             " does not exist): no zcal agent has published on this host";
    case EPROTO:
      return "incompatible or corrupt segment " + name + ": " + detail;
    case EACCES:
      return "not allowed to read segment " + name + ": " + detail;
    default:
      return "cannot read segment " + name + ": " + (detail.empty() ? std::strerror(-rc) : detail);
  }
}

}  // namespace

Result<ExportSelection> SelectExport(const ExportKeyArgs& args, const ExportPlan& plan,
                                     std::string_view command, std::ostream& warnings,
                                     std::uint64_t now_ns) {
  std::optional<ExportFallback> fallback;
  if (!args.fallback.empty()) {
    auto parsed = ParseExportFallback(args.fallback);
    if (!parsed) return tl::unexpected(parsed.error());
    fallback = *parsed;
  }
  auto key = MakeKey(args);
  if (!key) return tl::unexpected(key.error());

  ExportSelection selection;
  const std::string name = SegmentName(args.segment);
  selection.values.segment = name;
  selection.values.key = key->text;
  selection.values.depth = plan.depth;
  selection.values.depth_asked = plan.depth_asked;
  // zcal_lookup_depth takes a count of sends in flight; the class's own
  // count falls in it, and stream's is ZCAL_DEPTH_STREAM_FROM.
  const std::uint32_t depth = plan.depth == DepthClass::kStream
                                  ? ZCAL_DEPTH_STREAM_FROM
                                  : static_cast<std::uint32_t>(plan.depth);
  const std::string depth_name(DepthClassName(plan.depth));
  const std::string prefix = std::string(command) + ": warning: ";
  const std::string fallback_note =
      fallback ? "printing the fallback " + args.fallback + " (ZCAL_SOURCE=fallback)" : "";

  zcal_handle* raw = nullptr;
  const int rc = zcal_open(name.c_str(), &raw);
  Handle handle(raw);
  if (rc != 0) {
    if (rc == -EINVAL) return Fail(Errc::kInvalidArgument, zcal_error_detail());
    const std::string why = OpenError(rc, name);
    if (!fallback) return Fail(rc == -ENOENT ? Errc::kNotFound : Errc::kFailed, why);
    warnings << prefix << why << ": " << fallback_note << "\n";
    return AllFallback(std::move(selection), *fallback, plan, "no_segment");
  }

  SegmentTable table;
  table.name = name;
  zcal_info info{};
  if (const int r = zcal_read_info(handle.get(), &info); r != 0)
    return Fail(Errc::kFailed, "cannot read segment " + name + ": " + std::strerror(-r));
  table.info = info;
  for (std::uint32_t i = 0; i < info.count; ++i) {
    zcal_shm_entry e{};
    if (zcal_read_entry(handle.get(), i, &e) == 0) table.entries.push_back(e);
  }
  selection.show = ThresholdsJson(table, now_ns);
  if (args.require_class && plan.depth != DepthClass::kStream &&
      std::none_of(table.entries.begin(), table.entries.end(), [&](const zcal_shm_entry& e) {
        return e.depth_class == static_cast<std::uint16_t>(plan.depth);
      })) {
    std::set<std::string> classes;
    for (const zcal_shm_entry& e : table.entries) classes.insert(zcal_depth_name(e.depth_class));
    std::string listed;
    for (const std::string& c : classes) listed += (listed.empty() ? "" : ", ") + c;
    return Fail(Errc::kNotFound,
                "--depth " + plan.depth_asked + ": segment " + name + " has no entry of depth " +
                    depth_name + " for any scope (its classes: " +
                    (listed.empty() ? "none" : listed) +
                    "); the agent publishes the classes of its depths: setting where they "
                    "were measured; without --depth the stream entries answer");
  }
  selection.values.stale = (info.flags & ZCAL_FLAG_STALE) != 0;
  if (selection.values.stale) {
    const std::string why = "segment " + name +
                            " is stale (an agent republished its saved results at start "
                            "and has not confirmed them yet)";
    if (args.fresh) {
      if (!fallback) return Fail(Errc::kNotFound, why + "; --fresh asks for confirmed values only");
      warnings << prefix << why << ", and --fresh refuses it: " << fallback_note << "\n";
      selection.values.stale = false;
      return AllFallback(std::move(selection), *fallback, plan, "stale");
    }
    warnings << prefix << why << ": using it (--fresh refuses a stale table)\n";
  }

  std::vector<calibrator::Method> missing_required, missing_other, no_class;
  for (calibrator::Method method : plan.methods) {
    ExportedMethod e;
    e.method = static_cast<std::uint8_t>(method);
    zcal_result r{};
    const int lr = zcal_lookup_depth(handle.get(), &key->key, e.method, depth, &r);
    const bool refused_stream = lr == 0 && r.depth_fallback != 0 && args.strict_depth;
    const bool usable = lr == 0 && !refused_stream &&
                        (r.verdict == ZCAL_VERDICT_THRESHOLD ||
                         r.verdict == ZCAL_VERDICT_ALWAYS || r.verdict == ZCAL_VERDICT_NEVER);
    if (lr != 0 && lr != -ENODATA) return Fail(Errc::kFailed, OpenError(lr, name));
    if (!usable) {
      (Contains(plan.required, method) ? missing_required : missing_other).push_back(method);
      if (refused_stream) no_class.push_back(method);
      e.source = ExportSource::kMissing;
      e.scope = "none";
      e.why = lr == -ENODATA ? "no_entry"
              : refused_stream ? "no_depth_entry"
              : r.reason != ZCAL_REASON_NONE
                  ? "inconclusive:" + std::string(zcal_reason_name(r.reason))
                  : "inconclusive";
      if (fallback) UseFallback(e, *fallback);
      selection.values.methods.push_back(std::move(e));
      continue;
    }
    e.verdict = r.verdict;
    e.threshold_bytes = r.threshold_bytes;
    e.scope = ScopeOf(r, *key, table);
    e.estimated = r.estimated != 0;
    e.measured_at_ns = r.measured_at_ns;
    e.depth = static_cast<DepthClass>(r.depth_class);
    e.depth_fallback = r.depth_fallback != 0;
    selection.values.methods.push_back(std::move(e));
  }
  if (const std::string fell = selection.values.DepthFallbackNames(); !fell.empty())
    warnings << prefix << "segment " << name << " has no depth " << depth_name << " entry for "
             << key->text << " and " << fell << ": the stream entry answers (ZCAL_DEPTH_FALLBACK="
             << fell << "; --strict-depth refuses it)\n";
  const auto no_entry = [&](const std::vector<calibrator::Method>& methods) {
    const bool depth_only = std::all_of(methods.begin(), methods.end(), [&](calibrator::Method m) {
      return Contains(no_class, m);
    });
    if (depth_only)
      return "--strict-depth: segment " + name + " has no depth " + depth_name + " entry for " +
             key->text + " and " + MethodList(methods);
    return "segment " + name + " has no usable entry (none, or inconclusive" +
           (no_class.empty() ? std::string() : ", or none of depth " + depth_name) + ") for " +
           key->text + " and " + MethodList(methods);
  };
  if (fallback) {
    std::vector<calibrator::Method> all = missing_required;
    all.insert(all.end(), missing_other.begin(), missing_other.end());
    std::sort(all.begin(), all.end());
    if (!all.empty()) warnings << prefix << no_entry(all) << ": " << fallback_note << "\n";
    return selection;
  }
  if (!missing_required.empty())
    return Fail(Errc::kNotFound, no_entry(missing_required) +
                                     ", which the consumer reads; --fallback VALUE gives it a "
                                     "value of yours instead" +
                                     (no_class.empty() ? ""
                                                       : ", and without --strict-depth the "
                                                         "stream entry answers"));
  if (!missing_other.empty())
    warnings << prefix << no_entry(missing_other) << ": marked missing (ZCAL_MISSING="
             << selection.values.MissingNames() << ")\n";
  return selection;
}

}  // namespace zcal::agent
