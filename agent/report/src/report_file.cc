#include "zcal/agent/report/report_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <iostream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/samples_csv.h"
#include "zcal/common/bounded_read.h"
#include "zcal/common/clock.h"
#include "zcal/common/errno_text.h"

namespace zcal::agent {
namespace {

struct Position {
  std::size_t line = 1, column = 1;
};

Position PositionAt(std::string_view text, std::size_t offset) {
  Position p;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

// Where the value at `keys` (object keys from the top) is written: the
// offset of its key, or of the document's first byte when it is not found.
// It knows just enough JSON for that (strings, nesting) and runs only on a
// document nlohmann::json has already parsed.
std::size_t OffsetOf(std::string_view text, const std::vector<std::string>& keys) {
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return 0;
  std::size_t depth = 0, matched = 0;
  for (std::size_t i = first; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth-- == matched) return first;  // left the matched container
    } else if (c == '"') {
      const std::size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      const std::string_view raw = text.substr(start + 1, i - start - 1);
      const std::size_t next = text.find_first_not_of(" \t\r\n", i + 1);
      const bool is_key = next != std::string_view::npos && text[next] == ':';
      if (is_key && matched < keys.size() && depth == matched + 1 && raw == keys[matched]) {
        if (++matched == keys.size()) return start;
      }
    }
  }
  return first;
}

std::string Where(const std::string& name, std::string_view text, std::size_t offset) {
  const Position p = PositionAt(text, offset);
  return fmt::format("{}:{}:{}: ", name, p.line, p.column);
}

Result<ReportModel> LoadJson(const std::string& name, const std::string& text) {
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // what(): "[json.exception.parse_error.101] parse error at line 3, column
    // 1: syntax error while parsing ..."; the position is ours.
    std::string what = e.what();
    const std::size_t column = what.find("column");
    const std::size_t colon = what.find(": ", column == std::string::npos ? 0 : column);
    if (colon != std::string::npos) what.erase(0, colon + 2);
    const std::size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    return Fail(Errc::kParse, Where(name, text, offset) + "not valid JSON (" +
                                  (offset >= text.size() ? "truncated: " : "") + what + ")");
  }
  std::vector<std::string> where;
  auto model = ModelOfDocument(document, name, where);
  if (!model) {
    return Fail(Errc::kParse, Where(name, text, OffsetOf(text, where)) + model.error().message);
  }
  return model;
}

Result<ReportModel> LoadCsv(const std::string& name, std::string_view text,
                            const calibrator::DecisionOptions& options) {
  calibrator::SamplesCsvReader reader(name);
  if (auto fed = reader.Feed(text); !fed) return tl::unexpected(fed.error());
  auto samples = reader.Finish();
  if (!samples) return tl::unexpected(samples.error());
  ReportModel model;
  model.kind = ReportKind::kAnalysis;
  model.source = name;
  model.decision = DescribeDecision(options);
  model.entries = EntriesOf(calibrator::Analyze(*samples, options));
  return model;
}

}  // namespace

Result<std::unique_ptr<PendingFile>> PendingFile::Create(const std::string& given) {
  if (given == "-") return std::unique_ptr<PendingFile>(new PendingFile(given, nullptr, common::UniqueFd()));
  // A symbolic link keeps pointing where it did: its target is replaced.
  std::error_code ec;
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(given, ec);
  const std::string path = ec ? given : resolved.string();
  struct stat st{};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A device or a pipe (/dev/null, /dev/stdout, a FIFO) is written in
    // place: renaming over it would replace the device node itself.
    common::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY));
    if (!fd) {
      return Fail(Errc::kIo, given + ": cannot open for writing: " + common::ErrnoText(errno));
    }
    return std::unique_ptr<PendingFile>(new PendingFile(given, nullptr, std::move(fd)));
  }
  Result<std::unique_ptr<common::AtomicFile>> file = common::AtomicFile::Create(path);
  if (!file) {
    return Fail(Errc::kIo, file.error().message + "; choose a writable directory");
  }
  return std::unique_ptr<PendingFile>(new PendingFile(path, std::move(*file), common::UniqueFd()));
}

Result<void> PendingFile::WriteInPlace(std::string_view text) {
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(fd_.get(), text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Fail(Errc::kIo, path_ + ": cannot write: " + common::ErrnoText(errno));
    written += static_cast<std::size_t>(n);
  }
  return {};
}

Result<void> PendingFile::Commit(std::string_view text) {
  if (file_) {
    if (Result<void> written = file_->Write(text); !written) return written;
    if (Result<void> done = file_->Commit(); !done) return done;
  } else if (fd_) {
    if (Result<void> written = WriteInPlace(text); !written) return written;
  } else {
    std::cout << text << std::flush;
    if (!std::cout) return Fail(Errc::kIo, "standard output: write failed");
  }
  return {};
}

Result<ReportModel> LoadReportInput(const std::string& path,
                                    const calibrator::DecisionOptions& options) {
  const std::string name = path == "-" ? std::string("<stdin>") : path;
  Result<std::string> text = common::ReadBounded(
      path, common::kMaxDocumentBytes, common::InputKind::kRegularOrPipe, "report input");
  if (!text) return tl::unexpected(text.error());
  const std::size_t first = text->find_first_not_of(" \t\r\n");
  if (first != std::string::npos && ((*text)[first] == '{' || (*text)[first] == '[')) {
    return LoadJson(name, *text);
  }
  return LoadCsv(name, *text, options);
}

Result<void> WriteReport(PendingFile& file, ReportModel model) {
  model.generated_at_ns = common::RealtimeNs();
  return file.Commit(RenderReport(model));
}

}  // namespace zcal::agent
