# Finds the third-party libraries of each part of gradwire; one place to change them. Read by the
# build and by the installed gradwireConfig.cmake (which sets GRADWIRE_FIND_CORE_ONLY and calls
# the component functions for the components asked for).

# libtorch 2.x's Caffe2Config defines protobuf::libprotobuf as an empty stand-in when no such target
# exists yet, which would leave the parameter servers without protobuf: find the real one first.
if(NOT TARGET protobuf::libprotobuf)
  find_package(Protobuf QUIET)
endif()

# The core (common, comm, ddp, launch, models): libtorch with c10d's Gloo, JSON, CLI11.
find_package(Threads REQUIRED)
find_package(Torch REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)

# Parameter servers (rpc, ps): gRPC and protobuf; zlib's CRC-32 in checkpoints.
# gradwire_find_ps_dependencies([REQUIRED]) sets GRADWIRE_PS_DEPENDENCIES_FOUND.
macro(gradwire_find_ps_dependencies)
  find_package(Protobuf ${ARGN})
  if(TARGET protobuf::libprotobuf)
    get_target_property(_gw_protobuf_alias protobuf::libprotobuf ALIASED_TARGET)
    if(_gw_protobuf_alias STREQUAL "dummy")
      message(FATAL_ERROR "gradwire: protobuf::libprotobuf is libtorch's empty stand-in (its "
        "Caffe2Config defines one when protobuf was not found before it): call "
        "find_package(gradwire COMPONENTS ps) before find_package(Torch)")
    endif()
  endif()
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

# libtorch's c10d ships ProcessGroupGloo but its headers need gloo's (libgloo-dev). Debian's libtorch
# links gloo as a shared library (libgloo.so.0, linked here too); the torch wheel and pytorch.org's
# zip carry gloo inside libtorch_cpu, and a second gloo beside it would interpose its symbols.
find_path(GLOO_INCLUDE_DIR gloo/context.h REQUIRED)
set(GRADWIRE_GLOO_LIBRARY "")
if(TARGET torch_cpu)
  get_target_property(_gw_torch_cpu torch_cpu LOCATION)
  find_program(GRADWIRE_READELF readelf)
  if(_gw_torch_cpu AND GRADWIRE_READELF)
    execute_process(COMMAND ${GRADWIRE_READELF} -d ${_gw_torch_cpu} OUTPUT_VARIABLE _gw_needed
                    ERROR_QUIET)
    if(_gw_needed MATCHES "libgloo\\.so")
      find_library(GLOO_LIBRARY gloo REQUIRED)
      set(GRADWIRE_GLOO_LIBRARY ${GLOO_LIBRARY})
    endif()
  endif()
endif()

# CUDA: GRADWIRE_CUDA builds the NCCL backend and the CUDA paths (DDP's streams and events, the
# parameter servers' pinned copies); on by default when the libtorch found was built with CUDA.
set(_gw_torch_has_cuda OFF)
if(TORCH_CUDA_LIBRARIES OR TARGET torch_cuda)
  set(_gw_torch_has_cuda ON)
endif()
if(NOT GRADWIRE_FIND_CORE_ONLY)
  option(GRADWIRE_CUDA "Build the NCCL backend and CUDA paths (needs a libtorch with CUDA)"
         ${_gw_torch_has_cuda})
  if(GRADWIRE_CUDA AND NOT _gw_torch_has_cuda)
    message(FATAL_ERROR "gradwire: GRADWIRE_CUDA=ON needs a libtorch built with CUDA; torch "
                        "${Torch_VERSION} at ${TORCH_INSTALL_PREFIX} has none")
  endif()
else()
  set(GRADWIRE_CUDA ${_gw_torch_has_cuda})
endif()
set(GRADWIRE_WITH_NCCL OFF)
if(GRADWIRE_CUDA)
  find_path(_gw_pg_nccl torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp PATHS ${TORCH_INCLUDE_DIRS}
            NO_DEFAULT_PATH)
  if(NOT _gw_pg_nccl)
    message(FATAL_ERROR "gradwire: GRADWIRE_CUDA=ON but torch ${Torch_VERSION} has no "
                        "ProcessGroupNCCL.hpp")
  endif()
  set(GRADWIRE_WITH_NCCL ON)
endif()
if(NOT GRADWIRE_FIND_CORE_ONLY)
  message(STATUS "gradwire: torch ${Torch_VERSION}, CUDA ${GRADWIRE_CUDA}, NCCL backend "
                 "${GRADWIRE_WITH_NCCL}, parameter servers ${GRADWIRE_PS}, data ${GRADWIRE_DATA}")
endif()

# One target carrying torch + c10d's Gloo. Torch's own imported targets carry its include
# directories, so nothing here names a path inside torch's install (which may lie anywhere, a
# virtual environment of the project included).
# The torch wheel's libraries find the CUDA libraries of the wheel's nvidia-* packages at run time
# through an RPATH relative to themselves ($ORIGIN/../../nvidia/...), which GNU ld does not follow
# when it checks a program's link: it would take the machine's own, older libnccl.so.2 and report
# NCCL functions missing. GRADWIRE_TORCH_LINK_OPTIONS names those directories to the linker; the
# build puts them on gradwire_torch, the installed package on gradwire::gradwire_torch.
set(GRADWIRE_TORCH_LINK_OPTIONS "")
if(TORCH_INSTALL_PREFIX)
  file(GLOB _gw_nvidia_lib_dirs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
  foreach(_gw_dir IN LISTS _gw_nvidia_lib_dirs)
    get_filename_component(_gw_dir "${_gw_dir}" ABSOLUTE)
    list(APPEND GRADWIRE_TORCH_LINK_OPTIONS "LINKER:-rpath-link,${_gw_dir}")
  endforeach()
endif()

if(NOT TARGET gradwire_torch)
  add_library(gradwire_torch INTERFACE)
  target_link_libraries(gradwire_torch INTERFACE ${TORCH_LIBRARIES} ${GRADWIRE_GLOO_LIBRARY}
                        Threads::Threads)
  foreach(_gw_option IN LISTS GRADWIRE_TORCH_LINK_OPTIONS)
    target_link_options(gradwire_torch INTERFACE "$<BUILD_INTERFACE:${_gw_option}>")
  endforeach()
  target_include_directories(gradwire_torch SYSTEM INTERFACE ${GLOO_INCLUDE_DIR})
  target_compile_definitions(gradwire_torch INTERFACE USE_C10D_GLOO)
  if(GRADWIRE_WITH_NCCL)
    target_compile_definitions(gradwire_torch INTERFACE USE_C10D_NCCL GRADWIRE_WITH_NCCL=1
                               GRADWIRE_WITH_CUDA=1)
  endif()
endif()
