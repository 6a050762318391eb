#include "config_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include <yaml-cpp/eventhandler.h>

#include "zcal/common/text.h"
#include "zcal/common/units.h"

namespace zcal::agent {
namespace {

std::string Qualified(std::string_view parent, std::string_view child) {
  if (parent.empty()) return std::string(child);
  return std::string(parent) + "." + std::string(child);
}

std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string FormatNumber(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// Counts how deep mappings and lists nest, and keeps the first place past
// kMaxYamlNesting. yaml-cpp refuses its own limit (500 in 0.7) with a "bad
// file" message whose mark is not where the nesting went too deep, and a
// deep tree would also be walked recursively by whoever reads it. The
// handler's callbacks return nothing, so it does not stop the parse: the
// events after that place are only counted (and yaml-cpp's own limit still
// bounds the parser's recursion), and Load asks it when the parse ended.
class NestingCheck final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override { depth_ = 0; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark& mark, const std::string&,
                       YAML::anchor_t, YAML::EmitterStyle::value) override {
    Enter(mark);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Enter(mark);
  }
  void OnMapEnd() override { --depth_; }

  /// Where the nesting first went past the limit; nullopt if it never did.
  const std::optional<YAML::Mark>& too_deep() const { return too_deep_; }

 private:
  void Enter(const YAML::Mark& mark) {
    if (++depth_ > ConfigReader::kMaxYamlNesting && !too_deep_) too_deep_ = mark;
  }
  int depth_ = 0;
  std::optional<YAML::Mark> too_deep_;
};

// Where the nesting of `text` first went past the limit; nullopt if it
// never did, or if a syntax error came first.
std::optional<YAML::Mark> FirstTooDeep(const std::string& text) {
  NestingCheck check;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    while (!check.too_deep() && parser.HandleNextDocument(check)) {
    }
  } catch (const YAML::Exception&) {
    // A syntax error, or yaml-cpp's own depth limit: the load reports a
    // syntax error with its position, unless the nesting went too deep
    // before it.
  }
  return check.too_deep();
}

// yaml-cpp reports a tab in indentation as "illegal map value" at the end
// of the line: the first tab in the indentation of a line up to
// `last_line` (1-based), as (line, column), to point at instead.
std::optional<std::pair<int, int>> TabInIndentation(std::string_view text, int last_line) {
  int line = 1;
  for (std::size_t start = 0; start < text.size() && line <= last_line; ++line) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view row = text.substr(start, end - start);
    const std::size_t indent = row.find_first_not_of(" \t");
    const std::size_t tab = row.substr(0, indent).find('\t');
    if (tab != std::string_view::npos) return std::pair{line, static_cast<int>(tab) + 1};
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

std::optional<YAML::Node> ConfigReader::Load(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) {
    ErrorAt(1, 1, "the file contains NUL bytes; a configuration is YAML text");
    return std::nullopt;
  }
  const std::string owned(text);
  if (const std::optional<YAML::Mark> deep = FirstTooDeep(owned)) {
    ErrorAt(deep->line + 1, deep->column + 1,
            "YAML nesting deeper than " +
                std::to_string(kMaxYamlNesting) +
                " levels (mappings and lists inside each other); a "
                "configuration nests a few levels, see docs/config.md");
    return std::nullopt;
  }
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(owned);
  } catch (const YAML::Exception& e) {
    if (const auto tab = TabInIndentation(text, e.mark.line + 1)) {
      ErrorAt(tab->first, tab->second,
              "YAML syntax error: a tab in the indentation; indent with "
              "spaces");
    } else {
      ErrorAt(e.mark.line + 1, e.mark.column + 1, "YAML syntax error: " + e.msg);
    }
    return std::nullopt;
  }
  if (documents.empty() || documents.front().IsNull()) {
    ErrorAt(1, 1,
            "the configuration is empty; write a mapping of settings (see "
            "`zcal agent --print-default-config`), or omit --config to use "
            "the default");
    return std::nullopt;
  }
  if (documents.size() > 1) {
    const YAML::Mark mark = documents[1].Mark();
    ErrorAt(mark.line + 1, mark.column + 1,
            "a second YAML document; a configuration is one document");
    return std::nullopt;
  }
  return documents.front();
}

void ConfigReader::Error(const YAML::Node& node, std::string_view key,
                         std::string_view text) {
  const YAML::Mark mark = node.Mark();
  std::string message = key.empty() ? std::string(text)
                                    : std::string(key) + ": " +
                                          std::string(text);
  if (mark.is_null()) {
    ErrorAt(0, 0, std::move(message));
  } else {
    ErrorAt(mark.line + 1, mark.column + 1, std::move(message));
  }
}

void ConfigReader::ErrorAt(int line, int column, std::string text) {
  errors_.push_back(Problem{line, column, std::move(text)});
}

std::string ConfigReader::Message() const {
  std::vector<Problem> sorted = errors_;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Problem& a, const Problem& b) {
                     return std::tie(a.line, a.column) <
                            std::tie(b.line, b.column);
                   });
  std::string out;
  // A file of errors (a binary or a wrong file given as the configuration)
  // would otherwise print a line per error: tens of thousands from 1 MiB.
  const std::size_t listed = std::min(sorted.size(), kMaxListedProblems);
  for (const Problem& p : std::span(sorted).first(listed)) {
    if (!out.empty()) out += '\n';
    out += source_;
    if (p.line > 0) {
      out += ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
    }
    out += ": " + p.text;
  }
  if (const std::size_t rest = sorted.size() - listed; rest > 0) {
    out += '\n' + source_ + ": ... and " + std::to_string(rest) + " more " +
           (rest == 1 ? "error" : "errors") + " (the first " +
           std::to_string(listed) + " are listed)";
  }
  return out;
}

std::optional<Fields> ConfigReader::Map(
    const YAML::Node& node, std::string_view key,
    std::span<const std::string_view> allowed) {
  if (!node.IsMap()) {
    Error(node, key,
          (key.empty() ? "the top level is " : "expected a mapping, got ") +
              Describe(node) +
              (key.empty() ? "; it must be a mapping of settings such as "
                             "'schedule:' and 'segment:'"
                           : "; allowed keys: " + common::Join(allowed)));
    return std::nullopt;
  }
  Fields fields;
  for (auto it = node.begin(); it != node.end(); ++it) {
    // Copies: the iterator's pair is a temporary proxy.
    const YAML::Node k = it->first;
    const YAML::Node value = it->second;
    if (!k.IsScalar()) {
      Error(k, key, "a key is " + Describe(k) + "; keys must be plain words");
      continue;
    }
    const std::string name = k.Scalar();
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      std::string text = "unknown key";
      std::string_view best;
      std::size_t best_distance = 3;
      for (const std::string_view candidate : allowed) {
        const std::size_t d = EditDistance(name, candidate);
        if (d < best_distance) {
          best_distance = d;
          best = candidate;
        }
      }
      if (!best.empty()) text += "; did you mean '" + std::string(best) + "'?";
      text += "; allowed keys";
      if (!key.empty()) text += " in " + std::string(key);
      text += ": " + common::Join(allowed);
      Error(k, Qualified(key, name), text);
      continue;
    }
    if (fields.contains(name)) {
      Error(k, Qualified(key, name),
            "key given twice; keep one (the file would be ambiguous)");
      continue;
    }
    fields.emplace(name, value);
  }
  return fields;
}

bool ConfigReader::ExpectSequence(const YAML::Node& node,
                                  std::string_view key) {
  if (node.IsSequence()) return true;
  Error(node, key, "expected a list, got " + Describe(node));
  return false;
}

bool ConfigReader::Scalar(const YAML::Node& node, std::string_view key,
                          std::string_view expected) {
  if (node.IsScalar()) return true;
  Error(node, key,
        "expected " + std::string(expected) + ", got " + Describe(node));
  return false;
}

bool ConfigReader::String(const YAML::Node& node, std::string_view key,
                          std::string& out) {
  if (node.IsNull()) {
    out.clear();
    return true;
  }
  if (!Scalar(node, key, "a string")) return false;
  out = node.Scalar();
  return true;
}

bool ConfigReader::Bool(const YAML::Node& node, std::string_view key,
                        bool& out) {
  if (!Scalar(node, key, "true or false")) return false;
  const std::string& text = node.Scalar();
  if (text == "true") {
    out = true;
  } else if (text == "false") {
    out = false;
  } else {
    Error(node, key, "expected true or false, got '" + text + "'");
    return false;
  }
  return true;
}

bool ConfigReader::Number(const YAML::Node& node, std::string_view key,
                          double min, double max, double& out) {
  const std::string range =
      "allowed: " + FormatNumber(min) + " to " + FormatNumber(max);
  if (!Scalar(node, key, "a number (" + range + ")")) return false;
  const std::string& text = node.Scalar();
  double value = 0;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() ||
      end != text.data() + text.size() || !std::isfinite(value)) {
    Error(node, key, "'" + text + "' is not a number; " + range);
    return false;
  }
  if (value < min || value > max) {
    Error(node, key, text + " is out of range; " + range);
    return false;
  }
  out = value;
  return true;
}

bool ConfigReader::Whole(const YAML::Node& node, std::string_view key,
                         std::uint64_t min, std::uint64_t max,
                         std::uint64_t& out) {
  const std::string range =
      "allowed: " + std::to_string(min) + " to " + std::to_string(max);
  if (!Scalar(node, key, "a whole number (" + range + ")")) return false;
  const std::string& text = node.Scalar();
  // A minus sign is a number below any minimum, not a word.
  const bool negative = text.size() > 1 && text.front() == '-';
  const char* begin = text.data() + (negative ? 1 : 0);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
  if (text.empty() || ec == std::errc::invalid_argument ||
      end != text.data() + text.size()) {
    Error(node, key, "'" + text + "' is not a whole number; " + range);
    return false;
  }
  if (negative || ec != std::errc() || value < min || value > max) {
    Error(node, key, text + " is out of range; " + range);
    return false;
  }
  out = value;
  return true;
}

bool ConfigReader::Size(const YAML::Node& node, std::string_view key,
                        std::uint64_t min, std::uint64_t max,
                        std::uint64_t& out) {
  return Bytes(node, key, min, max, false, out);
}

bool ConfigReader::Rate(const YAML::Node& node, std::string_view key,
                        std::uint64_t min, std::uint64_t max,
                        std::uint64_t& out) {
  return Bytes(node, key, min, max, true, out);
}

bool ConfigReader::Bytes(const YAML::Node& node, std::string_view key,
                         std::uint64_t min, std::uint64_t max, bool rate,
                         std::uint64_t& out) {
  const auto format = rate ? common::FormatRate : common::FormatSize;
  const std::string range = "allowed: " + format(min) + " to " + format(max);
  if (!Scalar(node, key,
              std::string(rate ? "a rate such as 100MiB/s" : "a size such as 64KiB") +
                  " (" + range + ")")) {
    return false;
  }
  const Result<std::uint64_t> value =
      rate ? common::ParseRate(node.Scalar()) : common::ParseSize(node.Scalar());
  if (!value) {
    Error(node, key, value.error().message);
    return false;
  }
  if (*value < min || *value > max) {
    Error(node, key, node.Scalar() + " is out of range; " + range);
    return false;
  }
  out = *value;
  return true;
}

bool ConfigReader::Duration(const YAML::Node& node, std::string_view key,
                            std::chrono::milliseconds min,
                            std::chrono::milliseconds max, bool allow_zero,
                            std::chrono::milliseconds& out) {
  const std::string range = std::string("allowed: ") +
                            (allow_zero ? "0 (off) or " : "") +
                            common::FormatDuration(min) + " to " + common::FormatDuration(max);
  if (!Scalar(node, key, "a duration such as 30s (" + range + ")")) {
    return false;
  }
  const Result<std::chrono::milliseconds> value =
      common::ParseDuration(node.Scalar());
  if (!value) {
    Error(node, key, value.error().message);
    return false;
  }
  const bool zero_ok = allow_zero && value->count() == 0;
  if (!zero_ok && (*value < min || *value > max)) {
    Error(node, key, node.Scalar() + " is out of range; " + range);
    return false;
  }
  out = *value;
  return true;
}

}  // namespace zcal::agent
