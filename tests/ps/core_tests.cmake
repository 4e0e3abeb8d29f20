# Parameter-server core: table configs, the row initialiser, coalescing, sparse optimizers
# against torch::optim, table shards (sharding, sync steps, threads, limits), checkpoint files and
# the layout of dense parameters in a table.
gradwire_add_test(ps_core_test
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/table_config_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/initializer_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/coalesce_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/sparse_optimizer_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/table_shard_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/table_shard_limits_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/step_attempts_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/staleness_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/checkpoint_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/dense_layout_test.cpp
  LIBS gradwire_ps_core_internal gradwire_common_internal ZLIB::ZLIB
  LABELS ps)
