# Finds the third-party libraries of each part of gradwire; one place to change them. Read by the
# build and by the installed gradwireConfig.cmake (which sets GRADWIRE_FIND_CORE_ONLY and calls
# the component functions for the components asked for).

# The core (common, comm, ddp, launch, models): libtorch with c10d's Gloo, JSON, CLI11.
find_package(Threads REQUIRED)
find_package(Torch REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)

# Parameter servers (rpc, ps): gRPC and protobuf; zlib's CRC-32 in checkpoints.
# gradwire_find_ps_dependencies([REQUIRED]) sets GRADWIRE_PS_DEPENDENCIES_FOUND.
macro(gradwire_find_ps_dependencies)
  find_package(Protobuf ${ARGN})
  find_package(gRPC CONFIG ${ARGN})
  find_package(ZLIB ${ARGN})
  if(Protobuf_FOUND AND gRPC_FOUND AND ZLIB_FOUND)
    set(GRADWIRE_PS_DEPENDENCIES_FOUND ON)
  else()
    set(GRADWIRE_PS_DEPENDENCIES_FOUND OFF)
  endif()
endmacro()

# Data (RecordIO): zlib (gzip input), zstd (compressed chunks).
# gradwire_find_data_dependencies([REQUIRED]) sets GRADWIRE_DATA_DEPENDENCIES_FOUND.
macro(gradwire_find_data_dependencies)
  find_package(ZLIB ${ARGN})
  find_package(PkgConfig ${ARGN})
  if(PkgConfig_FOUND)
    pkg_check_modules(GRADWIRE_ZSTD ${ARGN} IMPORTED_TARGET libzstd)
  endif()
  if(ZLIB_FOUND AND GRADWIRE_ZSTD_FOUND)
    set(GRADWIRE_DATA_DEPENDENCIES_FOUND ON)
  else()
    set(GRADWIRE_DATA_DEPENDENCIES_FOUND OFF)
  endif()
endmacro()

# In the build: each optional component is built when asked for (ON by default) and its
# dependencies are found; otherwise CMake says what it leaves out and builds the core.
if(NOT GRADWIRE_FIND_CORE_ONLY)
  option(GRADWIRE_PS "Build the parameter servers (gradwire::ps; needs gRPC and protobuf)" ON)
  option(GRADWIRE_DATA "Build RecordIO data loading (gradwire::data; needs zlib and zstd)" ON)
  if(GRADWIRE_PS)
    gradwire_find_ps_dependencies(QUIET)
    if(NOT GRADWIRE_PS_DEPENDENCIES_FOUND)
      message(STATUS "gradwire: leaving out the parameter servers (ps): gRPC, protobuf or zlib "
                     "not found (Debian: libgrpc++-dev protobuf-compiler-grpc zlib1g-dev)")
      set(GRADWIRE_PS OFF)
    endif()
  else()
    message(STATUS "gradwire: leaving out the parameter servers (ps): GRADWIRE_PS=OFF")
  endif()
  if(GRADWIRE_DATA)
    gradwire_find_data_dependencies(QUIET)
    if(NOT GRADWIRE_DATA_DEPENDENCIES_FOUND)
      message(STATUS "gradwire: leaving out RecordIO data (data): zlib or zstd not found "
                     "(Debian: zlib1g-dev libzstd-dev)")
      set(GRADWIRE_DATA OFF)
    endif()
  else()
    message(STATUS "gradwire: leaving out RecordIO data (data): GRADWIRE_DATA=OFF")
  endif()
endif()

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
if(NOT GRADWIRE_FIND_CORE_ONLY)
  message(STATUS "gradwire: torch ${Torch_VERSION}, NCCL backend ${GRADWIRE_WITH_NCCL}, "
                 "parameter servers ${GRADWIRE_PS}, data ${GRADWIRE_DATA}")
endif()

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
