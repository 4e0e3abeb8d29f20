#include "rpc/tls.h"

#include <fstream>
#include <sstream>

#include "gradwire/common/error.h"

namespace gradwire::rpc {

std::string read_pem_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError("gradwire: cannot read the " + what + " file '" + path +
                      "'. Check the path and its permissions.");
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (content.str().empty()) {
    throw ConfigError("gradwire: the " + what + " file '" + path +
                      "' is empty; it must hold PEM text.");
  }
  return content.str();
}

std::shared_ptr<grpc::ServerCredentials> make_server_credentials(const std::string& cert_file,
                                                                 const std::string& key_file) {
  if (cert_file.empty() && key_file.empty()) return grpc::InsecureServerCredentials();
  if (cert_file.empty() || key_file.empty()) {
    throw ConfigError(
        std::string("gradwire: TLS needs both a certificate and a private key; only ") +
        (cert_file.empty() ? "the key ('" + key_file + "')"
                           : "the certificate ('" + cert_file + "')") +
        " was given. Pass both --tls-cert and --tls-key, or neither.");
  }
  grpc::SslServerCredentialsOptions options;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  pair.cert_chain = read_pem_file(cert_file, "TLS certificate");
  pair.private_key = read_pem_file(key_file, "TLS private key");
  options.pem_key_cert_pairs.push_back(std::move(pair));
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> make_channel_credentials(
    const std::string& root_cert_file) {
  if (root_cert_file.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = read_pem_file(root_cert_file, "TLS root certificate");
  return grpc::SslCredentials(options);
}

}  // namespace gradwire::rpc
