// The page's section on what the applications sent (their libzcal reports:
// docs/client.md, "Reporting what was sent").
#pragma once

#include <string>

#include "zcal/agent/report/report.h"

namespace zcal::agent {

/// Appends the section: nothing when model.apps is nullopt (an input that
/// carries no reports); a sentence when no application reports; else a
/// table per application and method and a chart of its message sizes with
/// the published host-default threshold of that method marked.
void AppsSection(std::string& out, const ReportModel& model);

}  // namespace zcal::agent
