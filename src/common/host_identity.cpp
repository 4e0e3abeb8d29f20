#include "gradwire/common/host_identity.h"
#include "gradwire/common/settings.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>

namespace gradwire {
namespace {

std::string trimmed(std::string text) {
  const auto is_space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!text.empty() && is_space(text.back())) text.pop_back();
  text.erase(text.begin(), std::find_if_not(text.begin(), text.end(), is_space));
  return text;
}

}  // namespace

std::string local_host_identity(const EnvMap& env) {
  if (auto forced = env.get(settings::kHostId.name); forced && !trimmed(*forced).empty()) {
    return trimmed(*forced);
  }
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  std::string boot_id;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::getline(boot, boot_id);
  boot_id = trimmed(boot_id);
  return boot_id.empty() ? std::string(name) : std::string(name) + "/" + boot_id;
}

}  // namespace gradwire
