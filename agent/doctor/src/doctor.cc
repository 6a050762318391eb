#include "zcal/agent/doctor/doctor.h"

#include <algorithm>

namespace zcal::agent::doctor {

std::string_view StatusName(Status status) {
  switch (status) {
    case Status::kOk:
      return "ok";
    case Status::kWarn:
      return "warn";
    case Status::kFail:
      return "fail";
  }
  return "fail";
}

std::vector<Finding> Diagnose(const DoctorOptions& options, const Observations& seen) {
  using Check = std::vector<Finding> (*)(const DoctorOptions&, const Observations&);
  static constexpr Check kChecks[] = {CheckUring,          CheckKernel, CheckOptionMemory,
                                      CheckMemlock,        CheckUserNamespaces,
                                      CheckNics,           CheckAgent};
  std::vector<Finding> all;
  for (const Check check : kChecks) {
    std::vector<Finding> found = check(options, seen);
    std::move(found.begin(), found.end(), std::back_inserter(all));
  }
  return all;
}

Status Worst(const std::vector<Finding>& findings) {
  Status worst = Status::kOk;
  for (const Finding& f : findings) worst = std::max(worst, f.status);
  return worst;
}

nlohmann::json FindingsJson(const std::vector<Finding>& findings) {
  nlohmann::json checks = nlohmann::json::array();
  for (const Finding& f : findings) {
    checks.push_back({{"check", f.check},
                      {"status", StatusName(f.status)},
                      {"detail", f.detail},
                      {"fix", f.status == Status::kOk ? nlohmann::json() : nlohmann::json(f.fix)}});
  }
  return {{"status", StatusName(Worst(findings))}, {"checks", std::move(checks)}};
}

}  // namespace zcal::agent::doctor
