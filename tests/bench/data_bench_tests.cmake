# gradwire-bench data: settings, file sets and report (pure and small), and short real runs of the
# binary on 1 and 2 local ranks. Included from tests/bench/CMakeLists.txt.
if(TARGET gradwire_bench_data AND COMMAND gradwire_add_test)
  gradwire_add_test(bench_data_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/data_bench_settings_test.cpp
            ${CMAKE_CURRENT_LIST_DIR}/data_bench_report_test.cpp
            ${CMAKE_CURRENT_LIST_DIR}/data_bench_files_test.cpp
            ${CMAKE_CURRENT_LIST_DIR}/data_bench_run_test.cpp
    LIBS gradwire_bench_data)
  target_compile_definitions(bench_data_test PRIVATE
    GRADWIRE_BENCH_PATH="$<TARGET_FILE:gradwire-bench>")
  add_dependencies(bench_data_test gradwire-bench)
endif()
