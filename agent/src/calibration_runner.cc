#include "zcal/agent/calibration_runner.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stop_token>

#include <spdlog/spdlog.h>

#include "zcal/agent/host_snapshot.h"

namespace zcal::agent {

struct CalibrationRunner::Mailbox {
  std::mutex mutex;
  std::optional<RoundOutcome> outcome;
  std::function<void()> notify;
  std::atomic<bool> probing{false};
};

namespace {

RoundOutcome RunRound(const std::stop_token& stop, const CalibrateFn& calibrate,
                      std::vector<PathJob>& jobs) {
  std::atomic<bool> cancel{false};
  const std::stop_callback on_stop(stop, [&cancel] {
    cancel.store(true, std::memory_order_relaxed);
  });
  const auto started = std::chrono::steady_clock::now();
  RoundOutcome outcome;
  // What a path leaves of its share goes to the paths after it, evenly: a
  // loopback path whose zerocopy sends the kernel copies is done in a few
  // probes, and the discard path after it can use the rest.
  double unspent = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    PathJob& job = jobs[i];
    const double carried = unspent / static_cast<double>(jobs.size() - i);
    unspent -= carried;
    job.options.budget_seconds += carried;
    const auto job_started = std::chrono::steady_clock::now();
    job.options.cancel = &cancel;
    const std::string name = job.options.PathName();
    const auto progress = [&name](const probes::CalibrationProgress& p) {
      spdlog::debug("{}: probe {} of ~{}: {} at {} bytes", name, p.done + 1,
                    p.total, calibrator::MethodName(p.method), p.size_bytes);
    };
    Result<probes::CalibrationReport> report;
    try {
      report = calibrate(job.options, progress);
    } catch (const std::exception& e) {
      report = Fail(Errc::kFailed,
                    "calibration of path " + name + " threw: " + e.what());
    }
    const bool cancelled = cancel.load(std::memory_order_relaxed) ||
                           (report && report->cancelled);
    const double used =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - job_started).count();
    unspent += std::max(0.0, job.options.budget_seconds - used);
    outcome.reports.push_back(PathReport{name, std::move(report)});
    if (cancelled) {
      outcome.cancelled = true;
      break;
    }
  }
  outcome.duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  return outcome;
}

}  // namespace

std::vector<PathJob> PlanRound(const Config& config) {
  std::vector<PathJob> jobs;
  for (const PathConfig& path : config.paths) {
    PathJob job;
    probes::CalibrationOptions& o = job.options;
    o.target = ProbeTarget(path);
    o.path_name = path.name;
    o.methods = config.methods;
    o.min_size = config.min_size_bytes;
    o.max_size = config.max_size_bytes;
    o.decision = config.decision;
    o.budget_seconds = config.budget.seconds_per_calibration /
                       static_cast<double>(config.paths.size());
    o.max_bytes_per_second = config.budget.bytes_per_second;
    o.root = config.host_root;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

CalibrationRunner::CalibrationRunner(CalibrateFn calibrate,
                                     std::function<void()> notify)
    : calibrate_(std::move(calibrate)), mailbox_(std::make_shared<Mailbox>()) {
  mailbox_->notify = std::move(notify);
}

CalibrationRunner::~CalibrationRunner() {
  {
    const std::lock_guard lock(mailbox_->mutex);
    mailbox_->notify = nullptr;
  }
  worker_.request_stop();
  if (worker_.joinable()) worker_.join();
}

bool CalibrationRunner::Start(std::vector<PathJob> jobs) {
  if (started_) return false;
  started_ = true;
  mailbox_->probing.store(true, std::memory_order_release);
  worker_ = std::jthread(
      [mailbox = mailbox_, calibrate = calibrate_, jobs = std::move(jobs)](
          const std::stop_token& stop) mutable {
        RoundOutcome outcome = RunRound(stop, calibrate, jobs);
        const std::lock_guard lock(mailbox->mutex);
        mailbox->outcome = std::move(outcome);
        mailbox->probing.store(false, std::memory_order_release);
        if (mailbox->notify) mailbox->notify();
      });
  return true;
}

void CalibrationRunner::RequestStop() { worker_.request_stop(); }

std::optional<RoundOutcome> CalibrationRunner::TakeOutcome() {
  std::optional<RoundOutcome> outcome;
  {
    const std::lock_guard lock(mailbox_->mutex);
    outcome.swap(mailbox_->outcome);
  }
  if (!outcome) return std::nullopt;
  // The worker stored its outcome as its last act; this join only waits
  // for it to return.
  worker_.join();
  started_ = false;
  return outcome;
}

bool CalibrationRunner::Probing() const {
  return mailbox_->probing.load(std::memory_order_acquire);
}

}  // namespace zcal::agent
