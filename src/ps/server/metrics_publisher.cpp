#include "ps/server/metrics_publisher.h"

#include <algorithm>

namespace gradwire::ps {

MetricsPublisher::MetricsPublisher(const std::string& listen)
    : endpoint_(std::make_unique<rpc::MetricsEndpoint>(listen, [this] { return render(); })) {}

void MetricsPublisher::attach(const std::string& server, const ServerMetrics* metrics) {
  const std::lock_guard<std::mutex> lock(mutex_);
  attached_.emplace_back(server, metrics);
}

void MetricsPublisher::detach(const ServerMetrics* metrics) {
  bool last = false;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    attached_.erase(std::remove_if(attached_.begin(), attached_.end(),
                                   [metrics](const auto& one) { return one.second == metrics; }),
                    attached_.end());
    last = attached_.empty();
  }
  // Outside the lock: a scrape in progress takes it to render.
  if (last) endpoint_->stop();
}

std::string MetricsPublisher::render() const {
  std::vector<metrics::FamilyValue> families;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [server, one] : attached_) {
      std::vector<metrics::FamilyValue> its = one->collect();
      metrics::add_labels(its, {{"server", server}});
      for (metrics::FamilyValue& family : its) families.push_back(std::move(family));
    }
  }
  return metrics::render_text(metrics::merge_families(std::move(families)));
}

}  // namespace gradwire::ps
