# `gradwire-bench data`: the RecordIO loader (ShardedRecordReader) against raw reads of the same
# files from the page cache. Included from bench/CMakeLists.txt after gradwire-bench is defined;
# paths are relative to this file so it may be included from anywhere.
if(TARGET gradwire_bench_cases AND TARGET gradwire_data AND TARGET gradwire-bench)
  add_library(gradwire_bench_data STATIC
    ${CMAKE_CURRENT_LIST_DIR}/cases/data_bench.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cases/data_bench_files.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cases/data_bench_report.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cases/data_bench_settings.cpp)
  target_link_libraries(gradwire_bench_data PUBLIC gradwire_bench_cases gradwire_data)
  target_compile_definitions(gradwire_bench_data PRIVATE
    GRADWIRE_BENCH_FASHION_MNIST_DIR="/usr/share/datasets/fashion-mnist")
  target_link_libraries(gradwire-bench PRIVATE gradwire_bench_data)
  list(APPEND GRADWIRE_BENCH_SUBCOMMANDS data)
else()
  message(STATUS "gradwire-bench: data skipped (needs gradwire_bench_cases and gradwire_data)")
endif()
