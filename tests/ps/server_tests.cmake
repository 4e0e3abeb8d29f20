# Parameter server: pure parts, the service in-process (tokens, tables, malformed and oversize
# requests, sync steps), its configured limits, checkpoints, and gradwire-ps-server as a real process.
gradwire_add_test(ps_server_test
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/server_messages_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/server_service_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/server_fuzz_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/server_fuzz_hostile_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/server_shared_refs_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/server_waiting_lookups_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/server_limits_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/server_checkpoint_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/server_process_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/server_hostile_process_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/server_hostile_process_limits_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/server_hostile_process_channel_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/table_registry_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/server_test_support.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../rpc/test_certificates.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../launch/test_support.cpp
  LIBS gradwire_ps_server_internal gradwire_ps_core_internal gradwire_ps_messages_internal
    gradwire_rpc_internal gradwire_common_internal
  LABELS ps)
target_compile_definitions(ps_server_test PRIVATE
  GRADWIRE_PS_SERVER_PATH="$<TARGET_FILE:gradwire-ps-server>")
add_dependencies(ps_server_test gradwire-ps-server)

# The server's metrics (docs/observability.md): what it counts, in-process on both transports,
# checked by promtool; gradwire-ps-server --metrics scraped by a real Prometheus server on
# loopback (skipped without Debian's prometheus package).
gradwire_add_test(ps_metrics_test
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/server_metrics_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/server_metrics_prometheus_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../launch/test_support.cpp
  LIBS gradwire_ps gradwire_ps_server_internal gradwire_rpc_internal gradwire_common_internal
    gradwire_test_support
  LABELS ps)
target_compile_definitions(ps_metrics_test PRIVATE
  GRADWIRE_PS_SERVER_PATH="$<TARGET_FILE:gradwire-ps-server>")
add_dependencies(ps_metrics_test gradwire-ps-server)
