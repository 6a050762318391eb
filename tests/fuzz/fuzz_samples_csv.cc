// libFuzzer target: the sample CSV parser and the analysis behind it must
// take any bytes without crashing, and what parses must round-trip.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/samples_csv.h"

using zcal::Result;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace cal = zcal::calibrator;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto samples = cal::ParseSamplesCsv(text, "fuzz.csv");
  // Streamed in two pieces split anywhere, the same bytes give the same
  // outcome: the tokenizer keeps no state it loses between chunks.
  cal::SamplesCsvReader reader("fuzz.csv");
  const std::size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  Result<std::vector<cal::Sample>> streamed = [&]() -> Result<std::vector<cal::Sample>> {
    if (auto ok = reader.Feed(text.substr(0, cut)); !ok) return tl::unexpected(ok.error());
    if (auto ok = reader.Feed(text.substr(cut)); !ok) return tl::unexpected(ok.error());
    return reader.Finish();
  }();
  if (streamed.has_value() != samples.has_value()) std::abort();
  if (!samples) {
    if (samples.error().message.empty()) std::abort();
    if (samples.error().message != streamed.error().message) std::abort();
    return 0;
  }
  if (streamed->size() != samples->size()) std::abort();
  for (cal::Objective objective :
       {cal::Objective::kEfficiency, cal::Objective::kThroughput,
        cal::Objective::kCpu}) {
    cal::DecisionOptions options;
    options.objective = objective;
    (void)cal::Analyze(*samples, options);
  }
  auto again = cal::ParseSamplesCsv(cal::WriteSamplesCsv(*samples), "again.csv");
  if (!again || again->size() != samples->size()) std::abort();
  return 0;
}
