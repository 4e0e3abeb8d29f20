# Finds the third-party libraries every layer may use; one place to change them.
find_package(Threads REQUIRED)
find_package(Torch REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
# Parameter servers (rpc, ps): gRPC and protobuf. Data (RecordIO) and checkpoints: zlib's CRC-32,
# zstd for compressed chunks.
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(GRADWIRE_ZSTD REQUIRED IMPORTED_TARGET libzstd)

# libtorch's c10d ships ProcessGroupGloo but its headers need gloo's (libgloo-dev).
find_path(GLOO_INCLUDE_DIR gloo/context.h REQUIRED)
find_library(GLOO_LIBRARY gloo REQUIRED)

# NCCL: only when the libtorch found was built with CUDA (compile-time detection).
set(GRADWIRE_WITH_NCCL OFF)
if(TORCH_CUDA_LIBRARIES OR TARGET torch_cuda)
  find_path(_gw_pg_nccl torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp PATHS ${TORCH_INCLUDE_DIRS})
  if(_gw_pg_nccl)
    set(GRADWIRE_WITH_NCCL ON)
  endif()
endif()
message(STATUS "gradwire: torch ${Torch_VERSION}, NCCL backend ${GRADWIRE_WITH_NCCL}")

# One imported target carrying torch + c10d's Gloo.
if(NOT TARGET gradwire_torch)
  add_library(gradwire_torch INTERFACE)
  target_link_libraries(gradwire_torch INTERFACE ${TORCH_LIBRARIES} ${GLOO_LIBRARY} Threads::Threads)
  target_include_directories(gradwire_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS} ${GLOO_INCLUDE_DIR})
  target_compile_definitions(gradwire_torch INTERFACE USE_C10D_GLOO)
  if(GRADWIRE_WITH_NCCL)
    target_compile_definitions(gradwire_torch INTERFACE USE_C10D_NCCL GRADWIRE_WITH_NCCL=1)
  endif()
endif()
