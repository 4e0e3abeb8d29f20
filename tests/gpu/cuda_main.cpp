// main() of the GPU tests: exits with 77 (ctest's SKIP_RETURN_CODE) and the reason when this
// process sees no GPU, so that a machine without one reports them skipped, never passed.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <iostream>
#include <string>

#include "gradwire/comm/world.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string path = argv[0];
  const std::string program = path.substr(path.find_last_of('/') + 1);
  if (GTEST_FLAG_GET(list_tests)) return RUN_ALL_TESTS();
  if (gradwire::torch_cuda_version().empty()) {
    std::cout << program << ": skipped: libtorch " << gradwire::torch_version()
              << " was built without CUDA\n";
    return 77;
  }
  if (!torch::cuda::is_available()) {
    std::cout << program << ": skipped: no visible GPU (torch::cuda::is_available() is false; "
                 "libtorch "
              << gradwire::torch_description() << ")\n";
    return 77;
  }
  std::cout << program << ": " << torch::cuda::device_count() << " GPU(s), libtorch "
            << gradwire::torch_description() << "\n";
  return RUN_ALL_TESTS();
}
