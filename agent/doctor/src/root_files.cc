#include "root_files.h"

#include <charconv>

#include "zcal/common/bounded_read.h"
#include "zcal/common/text.h"

namespace zcal::agent::doctor {

namespace {
// procfs and sysfs values are a line; a page bounds any of them.
constexpr std::uint64_t kMaxValueBytes = 4096;
}  // namespace

std::string UnderRoot(std::string_view root, std::string_view relative) {
  std::string path(root);
  if (path.empty() || path.back() != '/') path += '/';
  path += relative;
  return path;
}

std::optional<std::string> ReadFirstLine(const std::string& path) {
  const Result<std::string> text =
      common::ReadBounded(path, kMaxValueBytes, common::InputKind::kRegular, "value");
  if (!text) return std::nullopt;
  const std::string_view all = *text;
  return std::string(common::Trim(all.substr(0, all.find('\n'))));
}

std::optional<std::uint64_t> ReadNumber(const std::string& path) {
  const std::optional<std::string> line = ReadFirstLine(path);
  if (!line || line->empty()) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(line->data(), line->data() + line->size(), value);
  if (ec != std::errc() || end != line->data() + line->size()) return std::nullopt;
  return value;
}

std::optional<std::string> ReadSysctl(std::string_view root, std::string_view name) {
  std::string relative = "proc/sys/";
  for (const char c : name) relative += c == '.' ? '/' : c;
  return ReadFirstLine(UnderRoot(root, relative));
}

std::optional<std::uint64_t> ReadSysctlNumber(std::string_view root, std::string_view name) {
  std::string relative = "proc/sys/";
  for (const char c : name) relative += c == '.' ? '/' : c;
  return ReadNumber(UnderRoot(root, relative));
}

}  // namespace zcal::agent::doctor
