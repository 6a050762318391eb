#include "zcal/agent/metrics/status_page.h"

#include "zcal/agent/report/segment_table.h"
#include "zcal/common/clock.h"

namespace zcal::agent {

void StatusPage::Update(const AgentState& state, bool stale, const std::string& segment) {
  auto shown = std::make_shared<Shown>();
  shown->model = ModelOfState(state, segment);
  shown->model.kind = ReportKind::kLive;
  shown->model.stale = stale;
  shown->segment = segment;
  const std::lock_guard<std::mutex> lock(mutex_);
  shown_ = std::move(shown);
}

void StatusPage::UpdateApps(const AppsSnapshot& apps) {
  auto copy = std::make_shared<const AppsSnapshot>(apps);
  const std::lock_guard<std::mutex> lock(mutex_);
  apps_ = std::move(copy);
}

std::shared_ptr<const StatusPage::Shown> StatusPage::Current() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return shown_;
}

HttpResponse StatusPage::Page(std::uint64_t now_ns) const {
  const std::shared_ptr<const Shown> shown = Current();
  if (!shown) return {503, "text/plain; charset=utf-8", "the agent is starting\n"};
  ReportModel model = shown->model;
  model.generated_at_ns = now_ns;
  std::shared_ptr<const AppsSnapshot> apps;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    apps = apps_;
  }
  model.apps = *apps;
  const SegmentTable table = ReadSegmentTable(shown->segment);
  model.published = table.info ? ThresholdsJson(table, now_ns) : nlohmann::json();
  HttpResponse response{200, "text/html; charset=utf-8", RenderReport(model)};
  response.headers = {
      {"Content-Security-Policy", ReportContentSecurityPolicy() + "; frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"Cache-Control", "no-store"},
  };
  return response;
}

HttpResponse StatusPage::Thresholds(std::uint64_t now_ns) const {
  const std::shared_ptr<const Shown> shown = Current();
  HttpResponse response{200, "application/json", ""};
  response.headers = {{"Cache-Control", "no-store"}, {"X-Content-Type-Options", "nosniff"}};
  if (!shown) {
    response.status = 503;
    response.body = nlohmann::json{{"error", "the agent is starting"}}.dump() + "\n";
    return response;
  }
  const SegmentTable table = ReadSegmentTable(shown->segment);
  if (!table.info) {
    response.status = 503;
    response.body = nlohmann::json{{"error", "segment " + shown->segment +
                                                 " cannot be read: " + table.detail}}
                        .dump() + "\n";
    return response;
  }
  response.body = ThresholdsJson(table, now_ns).dump(2) + "\n";
  return response;
}

std::vector<HttpRoute> StatusPage::Routes() {
  std::shared_ptr<StatusPage> self = shared_from_this();
  return {
      {"/", [self](const HttpRequest&) { return self->Page(self->clock_->Wall()); }},
      {"/api/v1/thresholds",
       [self](const HttpRequest&) { return self->Thresholds(self->clock_->Wall()); }},
  };
}

}  // namespace zcal::agent
