#include "harness/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gradwire/common/error.h"
#include "harness/hardware.h"

namespace gradwire::bench {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + name + "_" + std::to_string(getpid()) + ".json";
}

TEST(CpuModelTest, ReadsTheFirstModelName) {
  EXPECT_EQ(cpu_model_from_cpuinfo("processor\t: 0\nmodel name\t: Intel(R) Xeon(R)  \n"
                                   "model name\t: other\n"),
            "Intel(R) Xeon(R)");
  EXPECT_EQ(cpu_model_from_cpuinfo("processor : 0\nBogoMIPS : 50\n"), "unknown");
}

TEST(Hardware, NamesTheBlasLibtorchResolved) {
  const std::string lib = "/usr/lib/x86_64-linux-gnu/";
  const auto maps = [](const std::string& path) {
    return "7f00-7f10 r-xp 00000000 08:01 42 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
           "7f20-7f30 r-xp 00000000 08:01 43 " +
           path + "\n";
  };
  EXPECT_EQ(blas_from_maps(maps(lib + "openblas-openmp/libblas.so.3")),
            "OpenBLAS (OpenMP) (" + lib + "openblas-openmp/libblas.so.3)");
  EXPECT_EQ(blas_from_maps(maps(lib + "openblas-pthread/libblas.so.3")),
            "OpenBLAS (pthreads) (" + lib + "openblas-pthread/libblas.so.3)");
  EXPECT_EQ(blas_from_maps(maps(lib + "blas/libblas.so.3.11.0")),
            "reference BLAS (netlib) (" + lib + "blas/libblas.so.3.11.0)");
  EXPECT_EQ(blas_from_maps("7f00-7f10 r-xp 00000000 08:01 42 /usr/lib/libc.so.6\n"), "none loaded");
}

TEST(UtcTimestampTest, IsIso8601) {
  EXPECT_EQ(utc_timestamp(std::chrono::system_clock::from_time_t(0)), "1970-01-01T00:00:00Z");
}

TEST(MachineMetadataTest, FillsMachineFacts) {
  const RunMetadata metadata = collect_machine_metadata();
  EXPECT_FALSE(metadata.cpu_model.empty());
  EXPECT_GE(metadata.cores, 1);
  EXPECT_FALSE(metadata.hostname.empty());
  EXPECT_EQ(metadata.date.size(), 20u);
}

TEST(JsonReportTest, RoundTripKeepsSchemaVersionAndFields) {
  RunMetadata metadata = collect_machine_metadata();
  metadata.gradwire_version = "0.1.0";
  metadata.torch_version = "1.13.0";
  metadata.backend = "gloo";
  metadata.ranks = 2;
  metadata.threads_per_rank = 1;
  metadata.memcpy_gbps = 9.5;
  metadata.command = {"gradwire-bench", "collectives"};
  nlohmann::json document = make_document("collectives", metadata);
  document["summary"] = to_json(summarize({1e-6, 2e-6, 3e-6}), 1e6);

  const std::string path = temp_path("report_round_trip");
  write_json_file(path, document);
  const nlohmann::json read = read_json_file(path);
  std::remove(path.c_str());

  EXPECT_EQ(read.at("schema_version"), kSchemaVersion);
  EXPECT_EQ(read.at("benchmark"), "collectives");
  const auto& meta = read.at("metadata");
  for (const char* field :
       {"gradwire_version", "torch_version", "torch_cuda", "backend", "ranks", "threads_per_rank", "cpu_model",
        "cores", "hostname", "date", "memcpy_gbps", "command"}) {
    EXPECT_TRUE(meta.contains(field)) << field;
  }
  EXPECT_EQ(meta.at("backend"), "gloo");
  EXPECT_EQ(meta.at("ranks"), 2);
  EXPECT_DOUBLE_EQ(meta.at("memcpy_gbps").get<double>(), 9.5);
  EXPECT_DOUBLE_EQ(read.at("summary").at("p50").get<double>(), 2.0);
  EXPECT_EQ(read.at("summary").at("count"), 3);
}

TEST(JsonReportTest, RejectsOtherSchemaVersionsAndBrokenFiles) {
  const std::string path = temp_path("report_bad");
  { std::ofstream(path) << R"({"schema_version": 999})"; }
  EXPECT_THROW(read_json_file(path), InvalidArgument);
  { std::ofstream(path) << R"({"benchmark": "x"})"; }
  EXPECT_THROW(read_json_file(path), InvalidArgument);
  { std::ofstream(path) << R"({"schema_version": )"; }
  EXPECT_THROW(read_json_file(path), Error);
  std::remove(path.c_str());
  EXPECT_THROW(read_json_file(path), Error);
}

TEST(JsonReportTest, WriteCreatesMissingDirectories) {
  const std::string directory = temp_path("report_dirs");
  const std::string path = directory + "/results/x.json";
  write_json_file(path, make_document("collectives", RunMetadata{}));
  EXPECT_EQ(read_json_file(path).at("benchmark"), "collectives");
  std::filesystem::remove_all(directory);
}

TEST(JsonReportTest, WriteWhereNoDirectoryCanBeThrows) {
  const std::string file = temp_path("report_file");  // a file where a directory would go
  { std::ofstream(file) << "x"; }
  EXPECT_THROW(write_json_file(file + "/x.json", nlohmann::json::object()), Error);
  std::remove(file.c_str());
}

TEST(OutputFileTest, PrepareCreatesTheDirectoriesAndLeavesNoFile) {
  const std::string directory = temp_path("output_dirs");
  const std::string path = directory + "/a/b/x.json";
  prepare_output_files({"", path});
  EXPECT_TRUE(std::filesystem::is_directory(directory + "/a/b"));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove_all(directory);
}

TEST(OutputFileTest, PrepareNamesAPathThatCannotBeWritten) {
  const std::string file = temp_path("output_file");
  { std::ofstream(file) << "x"; }
  for (const std::string& path : {file + "/x.json", file + "/sub/x.json", ::testing::TempDir()}) {
    try {
      prepare_output_file(path);
      ADD_FAILURE() << path << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("cannot write " + path), std::string::npos) << e.what();
    }
  }
  std::remove(file.c_str());
}

}  // namespace
}  // namespace gradwire::bench
