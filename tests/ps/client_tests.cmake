# Client and modules: id routing, lookups, batched calls, sync training equal to one process (each
# optimizer, with pushes sent at once or deferred, the hybrid model with DDP, and DenseModel in
# both roles, on shared memory and bytes), async
# convergence, the shared-memory transport, and failures (unreachable and stopped
# servers, a trainer that never finishes its step), and both sides' events on the timeline
# (timeline_test.cpp). Servers run in-process.
gradwire_add_test(ps_client_test
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/routing_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/client_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/embedding_equivalence_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/hybrid_equivalence_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/dense_equivalence_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/shared_memory_client_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/batched_calls_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/timeline_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/client_test_support.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../launch/test_support.cpp
  LIBS gradwire_ps gradwire_ps_core_internal gradwire_ps_client_internal gradwire_ps_messages_internal gradwire_rpc_internal gradwire_ddp gradwire_launch gradwire_test_support
    gradwire_ps_server_label_internal gradwire_common_internal nlohmann_json::nlohmann_json
  LABELS ps)

# The client's defaults from an injected environment (trainer rank and count from the launcher
# detector, TLS roots); one in-process TLS server for a client configured by GRADWIRE_TLS_ROOTS.
gradwire_add_test(ps_client_env_test
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/client_env_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../rpc/test_certificates.cpp
  LIBS gradwire_ps_client gradwire_ps_server LABELS ps)

# Faults end to end: a hybrid trainer (ps_fault_trainer) under gradwire-run --servers 2
# --max-restarts 2, with a trainer or a server SIGKILLed mid-step, ends bit-identical to an
# uninterrupted run (docs/ps.md "Restarts").
add_executable(ps_fault_trainer ${CMAKE_CURRENT_LIST_DIR}/fault_trainer.cpp)
target_link_libraries(ps_fault_trainer PRIVATE gradwire::gradwire gradwire::ps)
gradwire_add_test(ps_fault_test
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/fault_restart_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../launch/test_support.cpp
  LABELS ps
  COSTS FaultRestart=20)
target_compile_definitions(ps_fault_test PRIVATE
  GRADWIRE_RUN_PATH="$<TARGET_FILE:gradwire-run>"
  GRADWIRE_PS_SERVER_PATH="$<TARGET_FILE:gradwire-ps-server>"
  PS_FAULT_TRAINER_PATH="$<TARGET_FILE:ps_fault_trainer>")
add_dependencies(ps_fault_test gradwire-run gradwire-ps-server ps_fault_trainer)

# An elastic hybrid job in one process (threads on one job store, servers in-process): a trainer
# lost and one joined, the table and the DDP dense layer equal to one process following the same
# membership schedule (docs/elastic.md "Parameter servers").
gradwire_add_test(ps_elastic_test
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/elastic_hybrid_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/client_test_support.cpp
  LIBS gradwire_ps gradwire_ps_core_internal gradwire_ddp gradwire_elastic gradwire_data
  LABELS ps)

# The same elastic hybrid job as real processes: 2 gradwire-ps-server processes started by the
# test, `gradwire-run --elastic -n 3 --max-restarts 1` running elastic_hybrid_worker, a trainer
# SIGKILLed at a step's start or between its DDP allreduce and its server step, a replacement that
# joins; the dense layer and the rows equal one process following the printed schedule.
add_executable(elastic_hybrid_worker ${CMAKE_CURRENT_LIST_DIR}/elastic_hybrid_worker.cpp)
target_link_libraries(elastic_hybrid_worker PRIVATE gradwire_ps gradwire_ps_core_internal
  gradwire_ddp gradwire_elastic gradwire_data)
gradwire_add_test(ps_elastic_process_test
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/elastic_hybrid_process_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/../launch/test_support.cpp
  LIBS gradwire_ps_core_internal gradwire_data
  LABELS ps)
target_compile_definitions(ps_elastic_process_test PRIVATE
  GRADWIRE_RUN_PATH="$<TARGET_FILE:gradwire-run>"
  GRADWIRE_PS_SERVER_PATH="$<TARGET_FILE:gradwire-ps-server>"
  ELASTIC_HYBRID_WORKER_PATH="$<TARGET_FILE:elastic_hybrid_worker>")
add_dependencies(ps_elastic_process_test gradwire-run gradwire-ps-server elastic_hybrid_worker)
