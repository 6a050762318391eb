// Reads typed values out of a YAML tree and collects every problem with its
// position, so that one run of --check-config reports all of them.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace zcal::agent {

/// A mapping's values by key, as ConfigReader::Map returns them.
using Fields = std::map<std::string, YAML::Node>;

/// The value of `key` in `fields`; nullptr when the mapping lacks it.
inline const YAML::Node* FieldOf(const Fields& fields, std::string_view key) {
  const auto it = fields.find(std::string(key));
  return it == fields.end() ? nullptr : &it->second;
}

class ConfigReader {
 public:
  explicit ConfigReader(std::string_view source) : source_(source) {}

  /// Mappings and lists may nest this many levels (the top-level mapping is
  /// the first); the schema's values nest three levels deep.
  static constexpr int kMaxYamlNesting = 64;
  /// At most this many problems are listed by Message(); the rest are
  /// counted in one last line.
  static constexpr std::size_t kMaxListedProblems = 20;

  /// Parses the text; nullopt (with the error recorded) on a syntax error,
  /// nesting deeper than kMaxYamlNesting, an empty document or more than
  /// one document.
  std::optional<YAML::Node> Load(std::string_view text);

  /// Records "SOURCE:LINE:COLUMN: KEY: text" at the node's position.
  void Error(const YAML::Node& node, std::string_view key,
             std::string_view text);

  /// The node must be a mapping whose keys are all in `allowed`, each at
  /// most once. Returns key -> value, or nullopt when it is no mapping.
  /// Unknown and repeated keys are recorded and left out.
  std::optional<Fields> Map(
      const YAML::Node& node, std::string_view key,
      std::span<const std::string_view> allowed);

  bool ExpectSequence(const YAML::Node& node, std::string_view key);

  // Each reads a scalar into `out` and returns true, or records why not and
  // returns false leaving `out` alone. Ranges are inclusive.
  bool String(const YAML::Node& node, std::string_view key, std::string& out);
  bool Bool(const YAML::Node& node, std::string_view key, bool& out);
  bool Number(const YAML::Node& node, std::string_view key, double min,
              double max, double& out);
  /// A whole number in [min, max] (exact up to 2^53).
  bool Whole(const YAML::Node& node, std::string_view key, std::uint64_t min,
             std::uint64_t max, std::uint64_t& out);
  /// Sizes and rates in the grammar of zcal/common/units.h.
  bool Size(const YAML::Node& node, std::string_view key, std::uint64_t min,
            std::uint64_t max, std::uint64_t& out);
  bool Rate(const YAML::Node& node, std::string_view key, std::uint64_t min,
            std::uint64_t max, std::uint64_t& out);
  /// `allow_zero`: 0 is allowed besides [min, max] (meaning "off").
  bool Duration(const YAML::Node& node, std::string_view key,
                std::chrono::milliseconds min, std::chrono::milliseconds max,
                bool allow_zero, std::chrono::milliseconds& out);

  bool ok() const { return errors_.empty(); }
  /// The problems, one per line, in the order of their position: the first
  /// kMaxListedProblems, then "SOURCE: ... and N more errors" for the rest.
  std::string Message() const;

 private:
  struct Problem {
    int line = 0;    // 1-based
    int column = 0;  // 1-based
    std::string text;
  };
  void ErrorAt(int line, int column, std::string text);
  bool Scalar(const YAML::Node& node, std::string_view key,
              std::string_view expected);
  bool Bytes(const YAML::Node& node, std::string_view key, std::uint64_t min,
             std::uint64_t max, bool rate, std::uint64_t& out);

  std::string source_;
  std::vector<Problem> errors_;
};

/// "a list", "a mapping", "nothing", or the scalar quoted: for messages.
std::string Describe(const YAML::Node& node);

}  // namespace zcal::agent
