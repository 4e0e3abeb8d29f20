# gradwire_ps_core: table shards, the seeded row initialiser, sparse optimizers, the sync-step
# barrier and checkpoint files (docs/ps.md, docs/formats/ps-checkpoint.md). No RPC: common,
# libtorch (ATen), zlib (CRC-32) and nlohmann_json (the checkpoint header) only.
add_library(gradwire_ps_core
  ${CMAKE_CURRENT_LIST_DIR}/table_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/initializer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/coalesce.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sparse_optimizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sgd.cpp
  ${CMAKE_CURRENT_LIST_DIR}/adagrad.cpp
  ${CMAKE_CURRENT_LIST_DIR}/adam.cpp
  ${CMAKE_CURRENT_LIST_DIR}/table_shard.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint_header.cpp)
add_library(gradwire::ps_core ALIAS gradwire_ps_core)
target_include_directories(gradwire_ps_core PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(gradwire_ps_core PUBLIC gradwire_common gradwire_torch
  PRIVATE ZLIB::ZLIB nlohmann_json::nlohmann_json)
target_precompile_headers(gradwire_ps_core PRIVATE <ATen/ATen.h>)
set_target_properties(gradwire_ps_core PROPERTIES EXPORT_NAME ps_core)
