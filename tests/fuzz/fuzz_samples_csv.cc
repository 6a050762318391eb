// libFuzzer target: the sample CSV parser and the analysis behind it must
// take any bytes without crashing, and what parses must round-trip.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/samples_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace cal = zcal::calibrator;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto samples = cal::ParseSamplesCsv(text, "fuzz.csv");
  if (!samples) {
    if (samples.error().message.empty()) std::abort();
    return 0;
  }
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
