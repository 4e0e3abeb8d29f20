#include "rpc/status.h"

#include "gradwire/common/error.h"

namespace gradwire::rpc {
namespace {

// " Server said: <first line>." or "" when the status has no message.
std::string server_said(const grpc::Status& status) {
  std::string text = status.error_message();
  const size_t newline = text.find('\n');
  if (newline != std::string::npos) text.resize(newline);
  if (text.empty()) return "";
  return " Server said: " + text + ".";
}

}  // namespace

std::string status_code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "CODE_" + std::to_string(static_cast<int>(code));
  }
}

void throw_rpc_error(const grpc::Status& status, const std::string& operation,
                     const std::string& address, std::chrono::milliseconds waited) {
  GRADWIRE_CHECK(!status.ok());
  const std::string time = format_duration(waited);
  const std::string said = server_said(status);
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      throw PeerLostError(
          "gradwire: server " + address + " is unreachable (" + operation + ", waited " + time +
              "). Check that gradwire-ps-server runs there and that GRADWIRE_PS_ADDRS (or "
              "ClientOptions::servers) lists the right HOST:PORT; a restarted server continues "
              "from its checkpoint." +
              said,
          {});
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      throw TimeoutError("gradwire: " + operation + " on server " + address + " timed out after " +
                         time + "." + said +
                         " A sync step waits for every trainer: check that none of them stopped; "
                         "raise the deadline (ClientOptions::call_deadline, step_timeout or "
                         "GRADWIRE_TIMEOUT) if calls are legitimately slow.");
    case grpc::StatusCode::INVALID_ARGUMENT:
      throw InvalidArgument("gradwire: server " + address + " rejected the " + operation +
                            " (after " + time + ") as invalid; the table is unchanged." + said +
                            " Fix the request: ids in [0, num_rows), int64 ids, float32 rows "
                            "of the table's dim, and the same table config on every trainer.");
    case grpc::StatusCode::UNAUTHENTICATED:
      throw ConfigError("gradwire: server " + address + " refused the " + operation +
                        ": the job token was not accepted." + said +
                        " Trainers and servers must share one token (gradwire-run hands it out; "
                        "otherwise set GRADWIRE_TOKEN or --token-file to the same secret).");
    case grpc::StatusCode::NOT_FOUND:
      throw BackendError("gradwire: server " + address + " does not know the table of the " +
                         operation + " (after " + time + ")." + said +
                         " Create the table first (Client::create_table); a server restarted "
                         "without a checkpoint has lost its tables.");
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      throw BackendError("gradwire: server " + address + " refused the " + operation + " (after " +
                         time + ") for lack of resources." + said +
                         " Send fewer ids per call or raise max_message_bytes on both sides "
                         "(--max-message-bytes); tables are bounded by max_table_bytes.");
    case grpc::StatusCode::FAILED_PRECONDITION:
      throw BackendError("gradwire: server " + address + " cannot do the " + operation +
                         " in its current state (after " + time + ")." + said +
                         " Check the server's options (e.g. --checkpoint-dir).");
    case grpc::StatusCode::ABORTED:
      throw BackendError(
          "gradwire: server " + address + " aborted the " + operation + " (after " + time + ")." +
          said +
          " This process belongs to an attempt of the job (or is a trainer "
          "process) that a restart replaced, or the step was discarded; "
          "restarted trainers resume with Client::resume (docs/ps.md \"Restarts\").");
    default:
      throw BackendError("gradwire: " + operation + " on server " + address + " failed after " +
                         time + " with " + status_code_name(status.error_code()) + "." + said +
                         " Check the server's output for why.");
  }
}

}  // namespace gradwire::rpc
