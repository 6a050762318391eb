#include "zcal/agent/report/export_select.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "zcal/agent/report/segment_table.h"
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
    e.method = m;
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

// What every step of one selection needs: the key and its options, the
// segment's name, the fallback, and where warnings go.
struct Selecting {
  const ExportKeyArgs& args;
  const ExportPlan& plan;
  std::ostream& warnings;
  Key key;
  std::string name;
  std::optional<ExportFallback> fallback;
  std::string depth_name;
  std::string prefix;         ///< "zcal export: warning: "
  std::string fallback_note;  ///< what a warning says when the fallback answers
};

Result<Selecting> Prepare(const ExportKeyArgs& args, const ExportPlan& plan,
                          std::string_view command, std::ostream& warnings) {
  std::optional<ExportFallback> fallback;
  if (!args.fallback.empty()) {
    auto parsed = ParseExportFallback(args.fallback);
    if (!parsed) return tl::unexpected(parsed.error());
    fallback = *parsed;
  }
  auto key = MakeKey(args);
  if (!key) return tl::unexpected(key.error());
  return Selecting{args,
                   plan,
                   warnings,
                   std::move(*key),
                   SegmentName(args.segment),
                   fallback,
                   std::string(DepthClassName(plan.depth)),
                   std::string(command) + ": warning: ",
                   fallback ? "printing the fallback " + args.fallback +
                                  " (ZCAL_SOURCE=fallback)"
                            : ""};
}

// No segment to read: the fallback for every method, or the error.
Result<ExportSelection> WithoutSegment(const Selecting& s, int rc, ExportSelection selection) {
  if (rc == -EINVAL) return Fail(Errc::kInvalidArgument, zcal_error_detail());
  const std::string why = OpenError(rc, s.name);
  if (!s.fallback) return Fail(rc == -ENOENT ? Errc::kNotFound : Errc::kFailed, why);
  s.warnings << s.prefix << why << ": " << s.fallback_note << "\n";
  return AllFallback(std::move(selection), *s.fallback, s.plan, "no_segment");
}

Result<SegmentTable> ReadTable(zcal_handle* handle, const std::string& name) {
  SegmentTable table;
  table.name = name;
  zcal_info info{};
  if (const int r = zcal_read_info(handle, &info); r != 0)
    return Fail(Errc::kFailed, "cannot read segment " + name + ": " + std::strerror(-r));
  table.info = info;
  for (std::uint32_t i = 0; i < info.count; ++i) {
    zcal_shm_entry e{};
    if (zcal_read_entry(handle, i, &e) == 0) table.entries.push_back(e);
  }
  return table;
}

// With require_class, a depth class the segment holds for no scope is a
// mistake to say (the classes it holds listed), not a stream answer.
Result<void> RequireClass(const Selecting& s, const SegmentTable& table) {
  if (!s.args.require_class || s.plan.depth == DepthClass::kStream ||
      std::any_of(table.entries.begin(), table.entries.end(), [&](const zcal_shm_entry& e) {
        return e.depth_class == static_cast<std::uint16_t>(s.plan.depth);
      })) {
    return {};
  }
  std::set<std::string> classes;
  for (const zcal_shm_entry& e : table.entries) classes.insert(zcal_depth_name(e.depth_class));
  std::string listed;
  for (const std::string& c : classes) listed += (listed.empty() ? "" : ", ") + c;
  return Fail(Errc::kNotFound,
              "--depth " + s.plan.depth_asked + ": segment " + s.name +
                  " has no entry of depth " + s.depth_name + " for any scope (its classes: " +
                  (listed.empty() ? "none" : listed) +
                  "); the agent publishes the classes of its depths: setting where they "
                  "were measured; without --depth the stream entries answer");
}

// A stale table under --fresh: the fallback for every method, or the error.
Result<ExportSelection> RefuseStale(const Selecting& s, const std::string& why,
                                    ExportSelection selection) {
  if (!s.fallback) return Fail(Errc::kNotFound, why + "; --fresh asks for confirmed values only");
  s.warnings << s.prefix << why << ", and --fresh refuses it: " << s.fallback_note << "\n";
  selection.values.stale = false;
  return AllFallback(std::move(selection), *s.fallback, s.plan, "stale");
}

// The methods without a usable entry: required by the consumer or not, and
// those whose scope has only a stream entry that strict_depth refused.
struct Missing {
  std::vector<calibrator::Method> required, other, no_class;
};

// One method's value: the entry the lookup answers with, or marked missing
// (with the fallback when one is given) and noted in `missing`.
Result<ExportedMethod> LookUp(const Selecting& s, zcal_handle* handle, const SegmentTable& table,
                              calibrator::Method method, Missing& missing) {
  // zcal_lookup_depth takes a count of sends in flight; the class's own
  // count falls in it, and stream's is ZCAL_DEPTH_STREAM_FROM.
  const std::uint32_t depth = s.plan.depth == DepthClass::kStream
                                  ? ZCAL_DEPTH_STREAM_FROM
                                  : static_cast<std::uint32_t>(s.plan.depth);
  ExportedMethod e;
  e.method = method;
  // The segment's codes are the calibrator's (method.cc, decision.cc): here,
  // where the segment is read, they become its enums.
  zcal_result r{};
  const int lr =
      zcal_lookup_depth(handle, &s.key.key, static_cast<std::uint8_t>(method), depth, &r);
  const bool refused_stream = lr == 0 && r.depth_fallback != 0 && s.args.strict_depth;
  const bool usable = lr == 0 && !refused_stream &&
                      (r.verdict == ZCAL_VERDICT_THRESHOLD || r.verdict == ZCAL_VERDICT_ALWAYS ||
                       r.verdict == ZCAL_VERDICT_NEVER);
  if (lr != 0 && lr != -ENODATA) return Fail(Errc::kFailed, OpenError(lr, s.name));
  if (!usable) {
    (Contains(s.plan.required, method) ? missing.required : missing.other).push_back(method);
    if (refused_stream) missing.no_class.push_back(method);
    e.source = ExportSource::kMissing;
    e.scope = "none";
    e.why = lr == -ENODATA ? "no_entry"
            : refused_stream ? "no_depth_entry"
            : r.reason != ZCAL_REASON_NONE
                ? "inconclusive:" + std::string(calibrator::ReasonName(
                                        static_cast<calibrator::Reason>(r.reason)))
                : "inconclusive";
    if (s.fallback) UseFallback(e, *s.fallback);
    return e;
  }
  e.verdict = static_cast<calibrator::Verdict>(r.verdict);
  e.threshold_bytes = r.threshold_bytes;
  e.scope = ScopeOf(r, s.key, table);
  e.estimated = r.estimated != 0;
  e.measured_at_ns = r.measured_at_ns;
  e.depth = static_cast<DepthClass>(r.depth_class);
  e.depth_fallback = r.depth_fallback != 0;
  return e;
}

// The sentence for methods without a usable entry.
std::string NoEntry(const Selecting& s, const Missing& missing,
                    const std::vector<calibrator::Method>& methods) {
  const bool depth_only = std::all_of(methods.begin(), methods.end(), [&](calibrator::Method m) {
    return Contains(missing.no_class, m);
  });
  if (depth_only)
    return "--strict-depth: segment " + s.name + " has no depth " + s.depth_name + " entry for " +
           s.key.text + " and " + MethodList(methods);
  return "segment " + s.name + " has no usable entry (none, or inconclusive" +
         (missing.no_class.empty() ? std::string() : ", or none of depth " + s.depth_name) +
         ") for " + s.key.text + " and " + MethodList(methods);
}

// What the missing methods make of the selection: with a fallback, a
// warning; a required one refuses the export; any other is a warning.
Result<ExportSelection> Conclude(const Selecting& s, const Missing& missing,
                                 ExportSelection selection) {
  if (const std::string fell = selection.values.DepthFallbackNames(); !fell.empty())
    s.warnings << s.prefix << "segment " << s.name << " has no depth " << s.depth_name
               << " entry for " << s.key.text << " and " << fell
               << ": the stream entry answers (ZCAL_DEPTH_FALLBACK=" << fell
               << "; --strict-depth refuses it)\n";
  if (s.fallback) {
    std::vector<calibrator::Method> all = missing.required;
    all.insert(all.end(), missing.other.begin(), missing.other.end());
    std::sort(all.begin(), all.end());
    if (!all.empty())
      s.warnings << s.prefix << NoEntry(s, missing, all) << ": " << s.fallback_note << "\n";
    return selection;
  }
  if (!missing.required.empty())
    return Fail(Errc::kNotFound, NoEntry(s, missing, missing.required) +
                                     ", which the consumer reads; --fallback VALUE gives it a "
                                     "value of yours instead" +
                                     (missing.no_class.empty()
                                          ? ""
                                          : ", and without --strict-depth the "
                                            "stream entry answers"));
  if (!missing.other.empty())
    s.warnings << s.prefix << NoEntry(s, missing, missing.other)
               << ": marked missing (ZCAL_MISSING=" << selection.values.MissingNames() << ")\n";
  return selection;
}

}  // namespace

Result<ExportSelection> SelectExport(const ExportKeyArgs& args, const ExportPlan& plan,
                                     std::string_view command, std::ostream& warnings,
                                     std::uint64_t now_ns) {
  auto prepared = Prepare(args, plan, command, warnings);
  if (!prepared) return tl::unexpected(prepared.error());
  const Selecting& s = *prepared;
  ExportSelection selection;
  selection.values.segment = s.name;
  selection.values.key = s.key.text;
  selection.values.depth = plan.depth;
  selection.values.depth_asked = plan.depth_asked;

  zcal_handle* raw = nullptr;
  const int rc = zcal_open(s.name.c_str(), &raw);
  Handle handle(raw);
  if (rc != 0) return WithoutSegment(s, rc, std::move(selection));
  auto table = ReadTable(handle.get(), s.name);
  if (!table) return tl::unexpected(table.error());
  selection.show = ThresholdsJson(*table, now_ns);
  if (auto ok = RequireClass(s, *table); !ok) return tl::unexpected(ok.error());
  selection.values.stale = (table->info->flags & ZCAL_FLAG_STALE) != 0;
  if (selection.values.stale) {
    const std::string why = "segment " + s.name +
                            " is stale (an agent republished its saved results at start "
                            "and has not confirmed them yet)";
    if (args.fresh) return RefuseStale(s, why, std::move(selection));
    warnings << s.prefix << why << ": using it (--fresh refuses a stale table)\n";
  }
  Missing missing;
  for (calibrator::Method method : plan.methods) {
    auto e = LookUp(s, handle.get(), *table, method, missing);
    if (!e) return tl::unexpected(e.error());
    selection.values.methods.push_back(std::move(*e));
  }
  return Conclude(s, missing, std::move(selection));
}

}  // namespace zcal::agent
