// gRPC statuses become the gradwire errors of docs/errors.md, with the operation, the address,
// the time waited and the server's message in the text.
#include "rpc/status.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"

namespace gradwire::rpc {
namespace {

using namespace std::chrono_literals;

// Throws for `status` and returns the message when the error has type E.
template <typename E>
std::string message_of(const grpc::Status& status, const std::string& operation =
                                                       "lookup of "
                                                       "table 'emb'") {
  try {
    throw_rpc_error(status, operation, "127.0.0.1:5000", 1200ms);
  } catch (const E& error) {
    return error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "wrong error type for " << status_code_name(status.error_code()) << ": "
                  << error.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ThrowRpcError, UnavailableIsAnUnreachableServer) {
  const std::string text =
      message_of<PeerLostError>(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused"));
  EXPECT_TRUE(contains(text,
                       "server 127.0.0.1:5000 is unreachable (lookup of table 'emb', "
                       "waited 1.20 s)"))
      << text;
  EXPECT_TRUE(contains(text, "Server said: connection refused")) << text;
  EXPECT_TRUE(contains(text, "gradwire-ps-server")) << text;
}

TEST(ThrowRpcError, DeadlineExceededIsATimeoutCarryingTheServersReason) {
  const std::string text = message_of<TimeoutError>(
      grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                   "step 12 of table 'emb': trainer(s) 1 of 2 did not finish it within 5.00 s"),
      "step 12 of table 'emb'");
  EXPECT_TRUE(contains(text, "127.0.0.1:5000")) << text;
  EXPECT_TRUE(contains(text, "1.20 s")) << text;
  EXPECT_TRUE(contains(text, "trainer(s) 1 of 2")) << text;
}

TEST(ThrowRpcError, InvalidArgumentKeepsTheServersMessage) {
  const std::string text = message_of<InvalidArgument>(
      grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "id 300 out of range [0, 300)\nmore"));
  EXPECT_TRUE(contains(text, "id 300 out of range")) << text;
  EXPECT_FALSE(contains(text, "more")) << text;
  EXPECT_TRUE(contains(text, "lookup of table 'emb'")) << text;
}

TEST(ThrowRpcError, UnauthenticatedIsAConfigErrorAboutTheToken) {
  const std::string text =
      message_of<ConfigError>(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong token"));
  EXPECT_TRUE(contains(text, "GRADWIRE_TOKEN")) << text;
  EXPECT_TRUE(contains(text, "127.0.0.1:5000")) << text;
}

TEST(ThrowRpcError, OtherCodesAreBackendErrors) {
  for (const grpc::StatusCode code :
       {grpc::StatusCode::NOT_FOUND, grpc::StatusCode::RESOURCE_EXHAUSTED,
        grpc::StatusCode::FAILED_PRECONDITION, grpc::StatusCode::INTERNAL,
        grpc::StatusCode::CANCELLED}) {
    const std::string text = message_of<BackendError>(grpc::Status(code, "why"));
    EXPECT_TRUE(contains(text, "127.0.0.1:5000")) << text;
    EXPECT_TRUE(contains(text, "Server said: why")) << text;
  }
  EXPECT_TRUE(
      contains(message_of<BackendError>(grpc::Status(grpc::StatusCode::INTERNAL, "")), "INTERNAL"));
}

TEST(StatusCodeName, NamesKnownAndUnknownCodes) {
  EXPECT_EQ(status_code_name(grpc::StatusCode::DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
  EXPECT_EQ(status_code_name(static_cast<grpc::StatusCode>(42)), "CODE_42");
}

}  // namespace
}  // namespace gradwire::rpc
