// Checks an elastic job's output against one process (the netns tests' judge):
//   elastic_check OUTPUT_FILE STEPS BATCH
// Reads the "elastic-test:" lines of OUTPUT_FILE (the launchers' output of every host, in any
// order), replays the membership schedule they report on one process and compares the final
// parameters to 1e-9. Exit 0 and one line on success; 1 and what differs otherwise.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "elastic_data.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: elastic_check OUTPUT_FILE STEPS BATCH\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  gradwire::elastic_test::JobOutput job;
  job.text = text.str();
  gradwire::elastic_test::parse_job_output(job);
  const int64_t steps = std::stoll(argv[2]);
  const int64_t batch = std::stoll(argv[3]);
  if (static_cast<int64_t>(job.world_at_step.size()) != steps) {
    std::cerr << "elastic_check: " << job.world_at_step.size() << " steps reported, want " << steps
              << "\n";
    return 1;
  }
  const std::vector<double> expected = gradwire::elastic_test::reference(job.world_at_step, batch);
  if (job.final_parameters.size() != expected.size()) {
    std::cerr << "elastic_check: " << job.final_parameters.size() << " final parameters, want "
              << expected.size() << "\n";
    return 1;
  }
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    worst = std::max(worst, std::abs(job.final_parameters[i] - expected[i]));
  }
  std::string schedule;  // "3 workers from step 1, 2 from step 9"
  int last = 0;
  for (const auto& [step, world] : job.world_at_step) {
    if (world == last) continue;
    schedule += (schedule.empty() ? "" : ", ") + std::to_string(world) +
                (schedule.empty() ? " workers" : "") + " from step " + std::to_string(step);
    last = world;
  }
  if (worst > 1e-9) {
    std::cerr << "elastic_check: the final parameters differ from one process by " << worst << "\n";
    return 1;
  }
  std::printf("elastic_check: %lld steps (%s) equal one process (largest difference %.3g)\n",
              static_cast<long long>(steps), schedule.c_str(), worst);
  return 0;
}
