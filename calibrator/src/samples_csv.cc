#include "zcal/calibrator/samples_csv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "csv_tokenizer.h"
#include "zcal/calibrator/depth.h"
#include "zcal/common/text.h"
#include "zcal/common/units.h"

namespace zcal::calibrator {

namespace {

constexpr std::string_view kExpectedHeader =
    "the header must name the columns method, size, mb_per_s and cpu_pct "
    "(optional: path, copied_pct, repeat, depth, seq)";

using Field = CsvField;
using Row = CsvRow;

std::string Where(std::string_view source, std::size_t line,
                  std::size_t column) {
  return CsvWhere(source, line, column);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  return out;
}

template <typename T>
std::optional<T> ParseNumber(std::string_view text) {
  T value{};
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(value)) return std::nullopt;
  }
  return value;
}

std::string MethodList() {
  std::string list;
  for (Method m : kAllMethods) {
    if (!list.empty()) list += ", ";
    list += MethodName(m);
  }
  return list;
}

class RowReader {
 public:
  RowReader(std::string_view source, const Row& row,
            const std::map<std::string, std::size_t>& columns)
      : source_(source), row_(row), columns_(columns) {}

  // The field of a column; nullopt when the column is absent or the row is
  // short of it (short rows are rejected before).
  const Field* Get(const std::string& name) const {
    const auto it = columns_.find(name);
    if (it == columns_.end() || it->second >= row_.fields.size()) return nullptr;
    return &row_.fields[it->second];
  }

  bool Has(const std::string& name) const {
    const Field* f = Get(name);
    return f != nullptr && !f->text.empty();
  }

  tl::unexpected<Error> Bad(const Field& field, const std::string& what) const {
    return Fail(Errc::kParse,
                Where(source_, row_.line, field.column) + what);
  }

  template <typename T>
  Result<T> Number(const std::string& name, const std::string& expected) const {
    const Field* f = Get(name);
    if (f == nullptr || f->text.empty()) {
      const std::size_t col = f ? f->column : 1;
      return Fail(Errc::kParse, Where(source_, row_.line, col) + "empty " +
                                    name + "; expected " + expected);
    }
    const auto value = ParseNumber<T>(f->text);
    if (!value) {
      return Bad(*f, "'" + f->text + "' in column " + name +
                         " is not a number; expected " + expected);
    }
    return *value;
  }

  template <typename T>
  Result<std::optional<T>> OptionalNumber(const std::string& name,
                                          const std::string& expected) const {
    if (!Has(name)) return std::optional<T>();
    auto value = Number<T>(name, expected);
    if (!value) return tl::unexpected(value.error());
    return std::optional<T>(*value);
  }

 private:
  std::string_view source_;
  const Row& row_;
  const std::map<std::string, std::size_t>& columns_;
};

// The steps of a row, in the order its checks are made: each sets its
// fields of `s` or returns the first error.

// What a sample is of: method, size, depth, path; and how it ended.
Result<void> ReadWhat(const RowReader& r, Sample& s) {
  const Field& method_field = *r.Get("method");
  const auto method = ParseMethod(Lower(method_field.text));
  if (!method) {
    return r.Bad(method_field, "unknown method '" + method_field.text +
                                   "'; expected one of " + MethodList());
  }
  s.method = *method;

  const Field& size_field = *r.Get("size");
  const Result<std::uint64_t> size = common::ParseSize(size_field.text);
  if (!size) {
    return r.Bad(size_field, "column size: " + size.error().message);
  }
  if (*size == 0 || *size > (1ULL << 40)) {
    return r.Bad(size_field, "size " + size_field.text +
                                 " must be a positive number of bytes up to 1TiB");
  }
  s.size_bytes = *size;

  if (r.Has("depth")) {
    const Field& f = *r.Get("depth");
    const Result<std::uint32_t> depth = ParseDepth(f.text);
    if (!depth) return r.Bad(f, "column " + depth.error().message);
    s.depth = *depth;
  }

  if (r.Has("path")) s.path = r.Get("path")->text;
  if (r.Has("status")) {
    const Field& f = *r.Get("status");
    const std::string status = Lower(f.text);
    if (status == "ok") s.status = SampleStatus::kOk;
    else if (status == "unsupported") s.status = SampleStatus::kUnsupported;
    else if (status == "failed") s.status = SampleStatus::kFailed;
    else return r.Bad(f, "unknown status '" + f.text +
                             "'; expected ok, unsupported or failed");
  }
  if (r.Has("error")) s.error = r.Get("error")->text;
  return {};
}

constexpr std::string_view kWholeNumberOf = "a whole number of ";

// The optional counts: repeat, the host's CPU, ENOBUFS retries.
Result<void> ReadCounts(const RowReader& r, Sample& s) {
  auto repeat = r.OptionalNumber<std::uint32_t>("repeat", "a whole number");
  if (!repeat) return tl::unexpected(repeat.error());
  s.repeat = repeat->value_or(0);
  auto seq = r.OptionalNumber<std::uint64_t>("seq", "a whole number (the probe's place in the order)");
  if (!seq) return tl::unexpected(seq.error());
  s.seq = *seq;

  const std::string count(kWholeNumberOf);
  auto host = r.OptionalNumber<std::uint64_t>("host_cpu_ns", count + "ns");
  auto enobufs = r.OptionalNumber<std::uint64_t>("enobufs", count + "retries");
  if (!host) return tl::unexpected(host.error());
  if (!enobufs) return tl::unexpected(enobufs.error());
  s.host_cpu_ns = *host;
  s.enobufs = enobufs->value_or(0);
  return {};
}

// What the sample cost: the raw counts (bytes, wall_ns, cpu_ns) where the
// row has any, else the rates (mb_per_s, cpu_pct) read as one second.
Result<void> ReadCosts(const RowReader& r, Sample& s) {
  const std::string count(kWholeNumberOf);
  if (r.Has("bytes") || r.Has("wall_ns") || r.Has("cpu_ns")) {
    auto bytes = r.Number<std::uint64_t>("bytes", count + "bytes");
    if (!bytes) return tl::unexpected(bytes.error());
    auto wall = r.Number<std::uint64_t>("wall_ns", count + "ns");
    if (!wall) return tl::unexpected(wall.error());
    auto cpu = r.Number<std::uint64_t>("cpu_ns", count + "ns");
    if (!cpu) return tl::unexpected(cpu.error());
    s.bytes = *bytes;
    s.wall_ns = *wall;
    s.cpu_ns = *cpu;
  } else if (s.ok() || r.Has("mb_per_s") || r.Has("cpu_pct")) {
    auto mbps = r.Number<double>(
        "mb_per_s", "megabytes per second (10^6 bytes/s), e.g. 1234.5");
    if (!mbps) return tl::unexpected(mbps.error());
    if (*mbps <= 0) {
      return r.Bad(*r.Get("mb_per_s"),
                   "mb_per_s must be greater than 0 for a successful sample");
    }
    auto cpu = r.Number<double>(
        "cpu_pct", "sender CPU in percent of one core, e.g. 87.5");
    if (!cpu) return tl::unexpected(cpu.error());
    if (*cpu < 0) {
      return r.Bad(*r.Get("cpu_pct"), "cpu_pct must not be negative");
    }
    // A row is a rate: read it as one second of sending.
    s.wall_ns = 1'000'000'000;
    s.bytes = static_cast<std::uint64_t>(std::llround(*mbps * 1e6));
    s.cpu_ns = static_cast<std::uint64_t>(std::llround(*cpu * 1e7));
  }
  return {};
}

// How many zerocopy completions the kernel reported as copied: the counts,
// or a share (copied_pct) without them.
Result<void> ReadCopied(const RowReader& r, Sample& s) {
  const std::string count(kWholeNumberOf);
  if (r.Has("zc_completions") || r.Has("zc_copied")) {
    auto completions = r.Number<std::uint64_t>("zc_completions", count + "completions");
    if (!completions) return tl::unexpected(completions.error());
    auto copied = r.Number<std::uint64_t>("zc_copied", count + "completions");
    if (!copied) return tl::unexpected(copied.error());
    if (*copied > *completions) {
      return r.Bad(*r.Get("zc_copied"),
                   "zc_copied exceeds zc_completions");
    }
    s.zc_completions = *completions;
    s.zc_copied = *copied;
  } else if (r.Has("copied_pct")) {
    auto pct = r.Number<double>("copied_pct", "a percentage from 0 to 100");
    if (!pct) return tl::unexpected(pct.error());
    if (*pct < 0 || *pct > 100) {
      return r.Bad(*r.Get("copied_pct"),
                   "copied_pct must be a percentage from 0 to 100");
    }
    // A share without counts: stand for it with a million completions.
    s.zc_completions = 1'000'000;
    s.zc_copied = static_cast<std::uint64_t>(std::llround(*pct * 1e4));
  }
  return {};
}

Result<Sample> ParseRow(const RowReader& r) {
  Sample s;
  for (const auto step : {ReadWhat, ReadCounts, ReadCosts, ReadCopied}) {
    if (auto ok = step(r, s); !ok) return tl::unexpected(ok.error());
  }
  return s;
}

// The samples of one (path, method, size), bounded: past `limit` rows, a
// uniform reservoir of `limit` of them (Vitter's algorithm R with a fixed
// seed, so that a file always gives the same result).
struct SampleGroup {
  std::uint64_t rows = 0;
  std::vector<std::pair<std::uint64_t, Sample>> kept;  // (row index, sample)
};

struct GroupKey {
  std::string path;
  Method method;
  std::uint32_t depth;
  std::uint64_t size_bytes;
  bool operator<(const GroupKey& o) const {
    return std::tie(path, method, depth, size_bytes) <
           std::tie(o.path, o.method, o.depth, o.size_bytes);
  }
};

// splitmix64: a tiny deterministic generator for the reservoir.
std::uint64_t NextRandom(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

struct SamplesCsvReader::State {
  State(std::string source_name, SamplesCsvLimits limits_in)
      : source(std::move(source_name)),
        limits(limits_in),
        tokenizer(source, limits.max_record_bytes, limits.max_columns,
                  [this](CsvRow&& row) { return OnRow(std::move(row)); }) {}

  Result<void> OnRow(CsvRow&& row);
  Result<void> OnHeader(const CsvRow& row);
  void Keep(Sample&& sample);

  std::string source;
  SamplesCsvLimits limits;
  CsvTokenizer tokenizer;
  std::optional<CsvRow> header;
  std::map<std::string, std::size_t> columns;
  std::map<GroupKey, SampleGroup> groups;
  std::uint64_t rows = 0;
  std::uint64_t random = 0x5eed;
  bool has_baseline = false;
  bool failed = false;
};

Result<void> SamplesCsvReader::State::OnHeader(const CsvRow& row) {
  for (std::size_t i = 0; i < row.fields.size(); ++i) {
    const Field& f = row.fields[i];
    const std::string name = Lower(common::Trim(f.text));
    if (name.empty()) continue;
    if (!columns.emplace(name, i).second) {
      return Fail(Errc::kParse, Where(source, row.line, f.column) +
                                    "duplicate column '" + name + "'");
    }
  }
  for (const char* required : {"method", "size", "mb_per_s", "cpu_pct"}) {
    if (!columns.contains(required)) {
      // The names as found, bounded: a header may hold 1 MiB of them.
      constexpr std::size_t kListed = 16;
      std::string found;
      for (std::size_t i = 0; i < std::min(row.fields.size(), kListed); ++i) {
        found += (i == 0 ? "" : ",") + row.fields[i].text;
      }
      if (row.fields.size() > kListed) {
        found += ",... (" + std::to_string(row.fields.size() - kListed) + " more)";
      }
      return Fail(Errc::kParse,
                  Where(source, row.line, 1) + "missing column '" + required +
                      "'; " + std::string(kExpectedHeader) + " (found: " + found +
                      ")");
    }
  }
  header = row;
  return {};
}

void SamplesCsvReader::State::Keep(Sample&& sample) {
  has_baseline = has_baseline || (sample.ok() && !IsZerocopy(sample.method));
  SampleGroup& group = groups[GroupKey{sample.path, sample.method, sample.depth, sample.size_bytes}];
  const std::uint64_t index = rows++;
  ++group.rows;
  if (group.kept.size() < limits.max_samples_per_group) {
    group.kept.emplace_back(index, std::move(sample));
    return;
  }
  const std::uint64_t slot = NextRandom(random) % group.rows;
  if (slot < group.kept.size()) group.kept[slot] = {index, std::move(sample)};
}

Result<void> SamplesCsvReader::State::OnRow(CsvRow&& row) {
  if (!header) return OnHeader(row);
  if (row.fields.size() < header->fields.size()) {
    const Field& last = row.fields.back();
    return Fail(Errc::kParse,
                Where(source, row.line, last.column + last.text.size()) +
                    "expected " + std::to_string(header->fields.size()) +
                    " fields as in the header, found " +
                    std::to_string(row.fields.size()));
  }
  auto sample = ParseRow(RowReader(source, row, columns));
  if (!sample) return tl::unexpected(sample.error());
  Keep(std::move(*sample));
  return {};
}

SamplesCsvReader::SamplesCsvReader(std::string source, SamplesCsvLimits limits)
    : state_(std::make_unique<State>(std::move(source), limits)) {}

SamplesCsvReader::~SamplesCsvReader() = default;

Result<void> SamplesCsvReader::Feed(std::string_view chunk) {
  if (state_->failed) {
    return Fail(Errc::kInvalidArgument, state_->source + ": input after an error");
  }
  Result<void> ok = state_->tokenizer.Feed(chunk);
  state_->failed = !ok;
  return ok;
}

std::uint64_t SamplesCsvReader::rows() const { return state_->rows; }

std::size_t SamplesCsvReader::groups() const { return state_->groups.size(); }

Result<std::vector<Sample>> SamplesCsvReader::Finish() {
  State& s = *state_;
  if (s.failed) {
    return Fail(Errc::kInvalidArgument, s.source + ": input after an error");
  }
  s.failed = true;  // one Finish
  if (auto ok = s.tokenizer.Finish(); !ok) return tl::unexpected(ok.error());
  if (!s.header) {
    return Fail(Errc::kParse, Where(s.source, 1, 1) + "empty file; " +
                                  std::string(kExpectedHeader));
  }
  if (!s.has_baseline) {
    const Field& method = s.header->fields[s.columns["method"]];
    return Fail(Errc::kParse,
                Where(s.source, s.header->line, method.column) +
                    (s.rows == 0 ? std::string("no data rows")
                                 : std::string("no baseline rows")) +
                    "; expected successful rows of method copy or "
                    "uring_send, against which zerocopy is judged");
  }
  std::vector<std::pair<std::uint64_t, Sample>> kept;
  for (auto& [key, group] : s.groups) {
    for (auto& item : group.kept) kept.push_back(std::move(item));
  }
  std::sort(kept.begin(), kept.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Sample> samples;
  samples.reserve(kept.size());
  for (auto& [index, sample] : kept) samples.push_back(std::move(sample));
  return samples;
}

Result<std::vector<Sample>> ParseSamplesCsv(std::string_view text,
                                           std::string_view source) {
  SamplesCsvReader reader{std::string(source)};
  if (auto ok = reader.Feed(text); !ok) return tl::unexpected(ok.error());
  return reader.Finish();
}

namespace {

std::string Quote(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos &&
      (s.empty() || (s.front() != ' ' && s.front() != '#'))) {
    return std::string(s);
  }
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string Shortest(double value) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, end) : std::string("0");
}

std::string_view StatusName(SampleStatus status) {
  switch (status) {
    case SampleStatus::kOk: return "ok";
    case SampleStatus::kUnsupported: return "unsupported";
    case SampleStatus::kFailed: return "failed";
  }
  return "failed";
}

}  // namespace

std::string WriteSamplesCsv(std::span<const Sample> samples) {
  std::string out =
      "path,method,size,repeat,mb_per_s,cpu_pct,copied_pct,bytes,wall_ns,"
      "cpu_ns,host_cpu_ns,zc_completions,zc_copied,enobufs,status,error,depth,seq\n";
  for (const Sample& s : samples) {
    const double seconds = static_cast<double>(s.wall_ns) / 1e9;
    const std::optional<double> copied = s.CopiedFraction();
    out += Quote(s.path) + ',' + std::string(MethodName(s.method)) + ',' +
           std::to_string(s.size_bytes) + ',' + std::to_string(s.repeat) + ',';
    if (s.wall_ns > 0) {
      out += Shortest(s.ThroughputBytesPerSecond() / 1e6) + ',' +
             Shortest(static_cast<double>(s.cpu_ns) / 1e7 / seconds);
    } else {
      out += ',';
    }
    out += ',' + (copied ? Shortest(*copied * 100) : std::string()) + ',' +
           std::to_string(s.bytes) + ',' + std::to_string(s.wall_ns) + ',' +
           std::to_string(s.cpu_ns) + ',' +
           (s.host_cpu_ns ? std::to_string(*s.host_cpu_ns) : std::string()) +
           ',' + std::to_string(s.zc_completions) + ',' +
           std::to_string(s.zc_copied) + ',' + std::to_string(s.enobufs) +
           ',' + std::string(StatusName(s.status)) + ',' + Quote(s.error) + ',' +
           DepthName(s.depth) + ',' + (s.seq ? std::to_string(*s.seq) : std::string()) + '\n';
  }
  return out;
}

}  // namespace zcal::calibrator
