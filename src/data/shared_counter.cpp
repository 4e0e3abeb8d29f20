#include "gradwire/data/shared_counter.h"

#include <map>
#include <mutex>

namespace gradwire::data {

namespace {
class LocalCounter : public SharedCounter {
 public:
  int64_t add(const std::string& key, int64_t delta) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return values_[key] += delta;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, int64_t> values_;  // guarded by mutex_
};
}  // namespace

std::shared_ptr<SharedCounter> make_local_counter() { return std::make_shared<LocalCounter>(); }

}  // namespace gradwire::data
