// Channels, the token check and TLS against a small in-process service: only Batch is
// implemented (it answers the ids of its first lookup as float rows of width 1), which is enough
// to exercise the rpc layer without the parameter-server core.
#include "rpc/channel.h"

#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "gradwire/common/error.h"
#include "rpc/auth.h"
#include "rpc/proto/ps.grpc.pb.h"
#include "rpc/retry.h"
#include "rpc/status.h"
#include "rpc/tls.h"
#include "rpc/wire.h"
#include "test_certificates.h"

namespace gradwire::rpc {
namespace {

using namespace std::chrono_literals;

constexpr char kToken[] = "job-secret";

class EchoService final : public v1::ParameterServer::Service {
  grpc::Status Batch(grpc::ServerContext* context, const v1::BatchRequest* request,
                     v1::BatchResponse* response) override {
    if (grpc::Status status = check_token(*context, kToken); !status.ok()) return status;
    try {
      if (request->lookups_size() != 1) throw InvalidArgument("one lookup expected");
      const at::Tensor ids = decode_tensor(request->lookups(0).ids(), "lookup.ids", {at::kLong, 1});
      encode_tensor(ids.to(at::kFloat).unsqueeze(1), response->add_lookups()->mutable_rows(),
                    "rows");
    } catch (const InvalidArgument& error) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, error.what());
    }
    return grpc::Status::OK;
  }
};

class TestServer {
 public:
  explicit TestServer(
      std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials()) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", std::move(credentials), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~TestServer() { server_->Shutdown(std::chrono::system_clock::now() + 1s); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  bool started() const { return server_ != nullptr && port_ > 0; }

 private:
  EchoService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

v1::BatchRequest lookup_request() {
  v1::BatchRequest request;
  v1::LookupRequest* lookup = request.add_lookups();
  lookup->set_table("emb");
  encode_tensor(at::tensor(std::vector<int64_t>{3, 1, 4}), lookup->mutable_ids(), "ids");
  return request;
}

grpc::Status lookup(const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext& context,
                    v1::BatchResponse* response) {
  return v1::ParameterServer::NewStub(channel)->Batch(&context, lookup_request(), response);
}

TEST(Channel, CallWithTheTokenSucceeds) {
  TestServer server;
  ASSERT_TRUE(server.started());
  auto context = make_context(kToken, 10s);
  v1::BatchResponse response;
  const grpc::Status status = lookup(make_channel(server.address()), *context, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const at::Tensor rows = decode_tensor(response.lookups(0).rows(), "rows", {at::kFloat, 2});
  EXPECT_TRUE(at::equal(rows, at::tensor({3.0f, 1.0f, 4.0f}).unsqueeze(1)));
}

TEST(Channel, MissingOrWrongTokenIsUnauthenticatedWithoutEchoingIt) {
  TestServer server;
  const auto channel = make_channel(server.address());
  v1::BatchResponse response;
  grpc::ClientContext no_token;
  no_token.set_deadline(std::chrono::system_clock::now() + 10s);
  grpc::Status status = lookup(channel, no_token, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(status.error_message().find("missing token"), std::string::npos);

  grpc::ClientContext not_bearer;
  not_bearer.set_deadline(std::chrono::system_clock::now() + 10s);
  not_bearer.AddMetadata("authorization", kToken);
  status = lookup(channel, not_bearer, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);

  auto wrong = make_context("guess-123", 10s);
  status = lookup(channel, *wrong, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(status.error_message().find("wrong token"), std::string::npos);
  EXPECT_EQ(status.error_message().find("guess-123"), std::string::npos);
}

TEST(Channel, MalformedTensorIsInvalidArgumentAndTheServerKeepsServing) {
  TestServer server;
  const auto channel = make_channel(server.address());
  auto stub = v1::ParameterServer::NewStub(channel);
  v1::BatchRequest bad = lookup_request();
  bad.mutable_lookups(0)->mutable_ids()->mutable_data()->resize(5);
  auto context = make_context(kToken, 10s);
  v1::BatchResponse response;
  const grpc::Status status = stub->Batch(context.get(), bad, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("lookup.ids"), std::string::npos);
  auto again = make_context(kToken, 10s);
  EXPECT_TRUE(stub->Batch(again.get(), lookup_request(), &response).ok());
}

TEST(Channel, UnreachableServerIsUnavailableAndRetriedWithinTheDeadline) {
  // A port nobody listens on: a server that was started and stopped.
  std::string address;
  {
    TestServer server;
    address = server.address();
  }
  const auto channel = make_channel(address);
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  int attempts = 0;
  const grpc::Status status = call_with_retry(
      [&] {
        ++attempts;
        auto context = make_context(kToken, 1s);
        v1::BatchResponse response;
        return lookup(channel, *context, &response);
      },
      RetryPolicy{2, 10ms, 20ms}, deadline);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(attempts, 3);
  EXPECT_THROW(throw_rpc_error(status, "lookup of table 'emb'", address, 1s), PeerLostError);
}

TEST(Channel, EmptyAddressIsAConfigError) { EXPECT_THROW(make_channel(""), ConfigError); }

TEST(Tls, ServerCredentialsNeedBothFiles) {
  EXPECT_THROW(make_server_credentials("/tmp/cert.pem", ""), ConfigError);
  EXPECT_THROW(make_server_credentials("", "/tmp/key.pem"), ConfigError);
  EXPECT_THROW(make_server_credentials("/nonexistent/cert.pem", "/nonexistent/key.pem"),
               ConfigError);
  EXPECT_THROW(make_channel_credentials("/nonexistent/root.pem"), ConfigError);
}

TEST(Tls, ChannelTrustingTheCertificateTalksToATlsServer) {
  char pattern[] = "/tmp/gradwire_tls_XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  const auto certificate = testing::make_self_signed_certificate(dir);
  if (!certificate) {
    std::system(("rm -rf '" + dir + "'").c_str());
    GTEST_SKIP() << "openssl is not installed";
  }
  {
    TestServer server(make_server_credentials(certificate->cert_file, certificate->key_file));
    ASSERT_TRUE(server.started());
    ChannelOptions options;
    options.tls_root_cert_file = certificate->cert_file;
    auto context = make_context(kToken, 10s);
    v1::BatchResponse response;
    const grpc::Status status =
        lookup(make_channel(server.address(), options), *context, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();

    // A plaintext client cannot talk to the TLS server.
    auto plain = make_context(kToken, 3s);
    EXPECT_FALSE(lookup(make_channel(server.address()), *plain, &response).ok());
  }
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace gradwire::rpc
