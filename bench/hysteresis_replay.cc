// What the agent would have published over a series of calibrations:
// replays `zcal calibrate --json` documents, in the order given, through the
// agent's hysteresis (calibrator::ApplyHysteresis) per (path, method, depth
// class), the way the agent's publisher merges one calibration: every
// class's results, then the classes a method was not probed at dropped
// (their readers get the stream class's entry). bench/stability.py runs it
// on its runs; by hand:
//
//   hysteresis_replay [--threshold-tolerance X] [--high-confidence Y] FILE...
//
// Each FILE holds one document or a JSON array of them. The options default
// to configs/default.yaml's `hysteresis:` (0.5 and 0.9), each in [0, 1].
// Prints one JSON document:
//   {"options": {"threshold_tolerance": x, "high_confidence": x}, "runs": n,
//    "series": [{"path": "discard", "method": "msg_zerocopy", "depth": "1",
//                "changes": int,
//                "runs": [{"fresh": R|null, "decision": D, "published": R|null,
//                          "readers": R|null, "changed": bool}]}]}
//   R: {"verdict": "threshold|always|never|inconclusive",
//       "threshold_bytes": int|null, "reason": string ("" for none)}
//   D: "published" (the first result, or a replacement), "confirmed" (the
//      fresh result agrees with the published one), "kept" (it does not:
//      the published one stays, the fresh one may be the pending
//      candidate), "dropped" (not probed at this class: its entry was
//      removed), "not probed" (nothing there to drop), "absent" (no result
//      in this run).
//   readers: what a reader of this class is given after the run: the
//   class's entry, else the stream class's (null: neither). changed: it
//   differs from the previous run's in verdict, threshold or reason (the
//   first run never counts); changes: how many runs changed it.
// Exit status 0; 2, with one line on stderr, for a bad option or a file
// that cannot be read or is not such a document.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "zcal/calibrator/depth.h"
#include "zcal/calibrator/hysteresis.h"
#include "zcal/calibrator/method.h"
#include "zcal/calibrator/method_result.h"
#include "zcal/calibrator/report_json.h"
#include "zcal/common/result.h"

namespace {

namespace cal = zcal::calibrator;
using nlohmann::json;
using zcal::Errc;
using zcal::Fail;
using zcal::Result;

constexpr int kExitUsage = 2;

// A series' key. Classes sort numerically, stream last, as the CLI prints
// them; the depth's name is kept for printing.
struct Key {
  std::string path;
  cal::Method method = cal::Method::kMsgZerocopy;
  std::uint32_t order = 0;
  std::string depth;

  bool operator<(const Key& o) const {
    return std::tie(path, method, order) < std::tie(o.path, o.method, o.order);
  }
};

struct ClassRun {
  std::map<Key, cal::MethodResult> fresh;
  std::vector<Key> not_probed;
};

struct State {
  std::optional<cal::MethodResult> published;
  std::optional<cal::MethodResult> pending;
};

std::uint32_t DepthOrder(std::uint32_t depth) {
  return depth == cal::kStreamDepth ? std::numeric_limits<std::uint32_t>::max() : depth;
}

Result<Key> MakeKey(const std::string& path, cal::Method method, const std::string& depth) {
  const Result<std::uint32_t> d = cal::ParseDepth(depth);
  if (!d) return tl::unexpected(d.error());
  return Key{path, method, DepthOrder(*d), cal::DepthName(*d)};
}

// One class of one document: its results and the methods not probed.
zcal::Result<void> ReadClass(const json& c, const std::string& where, ClassRun& run) {
  const std::string depth =
      c.contains("depth") && c["depth"].is_string() ? c["depth"].get<std::string>() : "stream";
  const auto paths = c.find("paths");
  if (paths == c.end() || !paths->is_object()) {
    return Fail(Errc::kParse, where + ": no \"paths\" object (not `zcal calibrate --json`?)");
  }
  for (const auto& [path, entry] : paths->items()) {
    const Result<cal::PathResult> read = cal::ReadPathResult(entry, path);
    if (!read) return Fail(Errc::kParse, where + ": " + read.error().message);
    for (const auto& [method, result] : read->methods) {
      const Result<Key> key = MakeKey(path, method, depth);
      if (!key) return Fail(Errc::kParse, where + ": " + key.error().message);
      run.fresh[*key] = result;
    }
    const auto skipped = c.find("not_probed");
    if (skipped == c.end() || !skipped->is_object()) continue;
    for (const auto& [name, why] : skipped->items()) {
      const std::optional<cal::Method> method = cal::ParseMethod(name);
      if (!method) return Fail(Errc::kParse, where + ": not_probed: unknown method " + name);
      const Result<Key> key = MakeKey(path, *method, depth);
      if (!key) return Fail(Errc::kParse, where + ": " + key.error().message);
      run.not_probed.push_back(*key);
    }
  }
  return {};
}

Result<ClassRun> ReadRun(const json& doc, const std::string& where) {
  if (!doc.is_object()) return Fail(Errc::kParse, where + ": not a JSON object");
  ClassRun run;
  const auto depths = doc.find("depths");
  // A document from before depth classes: its top level is the stream class.
  if (depths == doc.end() || !depths->is_array() || depths->empty()) {
    if (auto ok = ReadClass(doc, where, run); !ok) return tl::unexpected(ok.error());
    return run;
  }
  for (std::size_t i = 0; i < depths->size(); ++i) {
    const std::string at = where + ": depths[" + std::to_string(i) + "]";
    if (auto ok = ReadClass((*depths)[i], at, run); !ok) return tl::unexpected(ok.error());
  }
  return run;
}

Result<std::vector<ClassRun>> ReadFiles(const std::vector<std::string>& files) {
  std::vector<ClassRun> runs;
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) return Fail(Errc::kIo, file + ": cannot be read; give a `zcal calibrate --json` file");
    const json doc = json::parse(in, nullptr, false);
    if (doc.is_discarded()) {
      return Fail(Errc::kParse, file + ": not JSON; give a `zcal calibrate --json` file");
    }
    const std::vector<json> docs = doc.is_array() ? doc.get<std::vector<json>>()
                                                  : std::vector<json>{doc};
    for (std::size_t i = 0; i < docs.size(); ++i) {
      const std::string where = doc.is_array() ? file + "[" + std::to_string(i) + "]" : file;
      Result<ClassRun> run = ReadRun(docs[i], where);
      if (!run) return tl::unexpected(run.error());
      runs.push_back(std::move(*run));
    }
  }
  if (runs.empty()) return Fail(Errc::kInvalidArgument, "no calibrations in the files given");
  return runs;
}

json Describe(const std::optional<cal::MethodResult>& r) {
  if (!r) return nullptr;
  return {{"verdict", cal::VerdictName(r->verdict)},
          {"threshold_bytes", r->threshold_bytes ? json(*r->threshold_bytes) : json(nullptr)},
          {"reason", cal::ReasonName(r->reason)}};
}

json Replay(const std::vector<ClassRun>& runs, const cal::HysteresisOptions& options) {
  std::map<Key, State> states;
  std::map<Key, json> series;
  for (const ClassRun& run : runs) {
    for (const auto& [key, fresh] : run.fresh) series.try_emplace(key, json::array());
    for (const Key& key : run.not_probed) series.try_emplace(key, json::array());
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const ClassRun& run = runs[i];
    std::map<Key, std::string> decisions;
    for (const auto& [key, fresh] : run.fresh) {
      State& s = states[key];
      const cal::HysteresisDecision d =
          cal::ApplyHysteresis(s.published, s.pending, fresh, options);
      const bool agrees = s.published && cal::Agree(*s.published, fresh, options);
      if (d.publish) s.published = fresh;
      s.pending = d.pending;
      decisions[key] = d.publish ? "published" : agrees ? "confirmed" : "kept";
    }
    // As the agent's publisher: the classes not probed are dropped after
    // every class was merged; readers then get the stream class's entry.
    for (const Key& key : run.not_probed) {
      const auto it = states.find(key);
      const bool dropped = key.order != DepthOrder(cal::kStreamDepth) && it != states.end() &&
                           it->second.published;
      if (dropped) states.erase(it);
      decisions[key] = dropped ? "dropped" : "not probed";
    }
    for (auto& [key, entries] : series) {
      const auto fresh = run.fresh.find(key);
      const auto own = states.find(key);
      std::optional<cal::MethodResult> published;
      if (own != states.end()) published = own->second.published;
      std::optional<cal::MethodResult> readers = published;
      if (!readers) {
        const Key stream{key.path, key.method, DepthOrder(cal::kStreamDepth), "stream"};
        if (const auto s = states.find(stream); s != states.end()) readers = s->second.published;
      }
      const json answer = Describe(readers);
      const bool changed = !entries.empty() && entries.back()["readers"] != answer;
      const auto decision = decisions.find(key);
      entries.push_back({
          {"fresh", fresh == run.fresh.end() ? json(nullptr) : Describe(fresh->second)},
          {"decision", decision == decisions.end() ? "absent" : decision->second},
          {"published", Describe(published)},
          {"readers", answer},
          {"changed", changed},
      });
    }
  }
  json out = {{"options",
               {{"threshold_tolerance", options.threshold_tolerance},
                {"high_confidence", options.high_confidence}}},
              {"runs", runs.size()},
              {"series", json::array()}};
  for (const auto& [key, entries] : series) {
    int changes = 0;
    for (const json& e : entries) changes += e["changed"].get<bool>() ? 1 : 0;
    out["series"].push_back({{"path", key.path},
                             {"method", cal::MethodName(key.method)},
                             {"depth", key.depth},
                             {"changes", changes},
                             {"runs", entries}});
  }
  return out;
}

Result<double> Fraction(const std::string& option, const char* text) {
  if (text == nullptr) return Fail(Errc::kInvalidArgument, option + ": needs a value in [0, 1]");
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(value >= 0 && value <= 1)) {
    return Fail(Errc::kInvalidArgument,
                option + " " + text + ": a number from 0 to 1 (as in hysteresis: of the "
                "agent's configuration)");
  }
  return value;
}

int Usage(const std::string& message) {
  std::cerr << "hysteresis_replay: " << message << "\n";
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  cal::HysteresisOptions options;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threshold-tolerance" || arg == "--high-confidence") {
      const Result<double> value = Fraction(arg, i + 1 < argc ? argv[i + 1] : nullptr);
      if (!value) return Usage(value.error().message);
      (arg == "--threshold-tolerance" ? options.threshold_tolerance : options.high_confidence) =
          *value;
      ++i;
    } else if (arg.starts_with("--")) {
      return Usage(arg + ": unknown option; hysteresis_replay [--threshold-tolerance X] "
                   "[--high-confidence Y] FILE...");
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty()) {
    return Usage("no files; hysteresis_replay [--threshold-tolerance X] "
                 "[--high-confidence Y] FILE... (each `zcal calibrate --json` output)");
  }
  const Result<std::vector<ClassRun>> runs = ReadFiles(files);
  if (!runs) return Usage(runs.error().message);
  std::cout << Replay(*runs, options).dump(2) << "\n";
  return 0;
}
