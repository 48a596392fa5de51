// Long-lived proxyless gRPC xDS client (C++, Debian gRPC 1.51, GenericStub + JSON bytes).
//
//   export GRPC_XDS_BOOTSTRAP=/path/bootstrap.json GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS=100
//   build/cxds-teaching-client
//
// Commands on stdin, one per line, handled in order:
//   call <request_id>   one unary call of /cxds.teaching.Inventory/GetQuote on xds:///quote;
//                       prints exactly one JSON line:
//                       {"request_id","ok","inventory","port","error","code","elapsed_ms"}
//   quit                exit 0 (end of stdin does the same)
// Nothing else is written to stdout; diagnostics go to stderr.
//
// Environment:
//   GRPC_XDS_BOOTSTRAP        bootstrap file (read by the C core)
//   CXDS_TEACHING_TARGET      testing only: another target, e.g. dns:///127.0.0.1:18080
//   CXDS_TEACHING_DEADLINE_MS per-call deadline (default 3000)
//   CXDS_TEACHING_MAX_SECONDS exit by itself after this many seconds (default 900; 0 disables)
//
// The reply is JSON written by our own backend. Only the flat fields this client needs are
// read, by a small scanner below; there is no general JSON parser here.

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/byte_buffer.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

constexpr const char* kMethod = "/cxds.teaching.Inventory/GetQuote";

long EnvNumber(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || n < 0) return fallback;
  return n;
}

// JSON string literal for `s` (the escapes RFC 8259 requires, nothing more).
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

// Finds `"key":` at the top level of a flat JSON object and returns the raw value text
// (a string literal with its quotes, a number, true/false/null).
std::optional<std::string> RawField(const std::string& json, std::string_view key) {
  const std::string needle = Quote(key);
  size_t pos = 0;
  while ((pos = json.find(needle, pos)) != std::string::npos) {
    size_t i = pos + needle.size();
    while (i < json.size() && (json[i] == ' ' || json[i] == '\t' || json[i] == '\n' || json[i] == '\r')) ++i;
    if (i >= json.size() || json[i] != ':') {
      pos += needle.size();
      continue;
    }
    ++i;
    while (i < json.size() && (json[i] == ' ' || json[i] == '\t' || json[i] == '\n' || json[i] == '\r')) ++i;
    if (i >= json.size()) return std::nullopt;
    const size_t start = i;
    if (json[i] == '"') {
      ++i;
      while (i < json.size() && json[i] != '"') i += (json[i] == '\\') ? 2 : 1;
      if (i >= json.size()) return std::nullopt;
      return json.substr(start, i + 1 - start);
    }
    while (i < json.size() && json[i] != ',' && json[i] != '}' && json[i] != ' ') ++i;
    return json.substr(start, i - start);
  }
  return std::nullopt;
}

std::string ByteBufferToString(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const auto& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

grpc::ByteBuffer StringToByteBuffer(const std::string& s) {
  grpc::Slice slice(s);
  return grpc::ByteBuffer(&slice, 1);
}

struct CallResult {
  bool ok = false;
  std::string inventory = "null";  // raw JSON value
  std::string port = "null";       // raw JSON value
  std::string error = "null";      // raw JSON value
  int code = 0;
  long elapsed_ms = 0;
};

CallResult CallOnce(grpc::GenericStub& stub, const std::string& request_id, long deadline_ms) {
  const auto started = std::chrono::steady_clock::now();
  CallResult result;
  const std::string body = "{\"sku\":\"paper\",\"request_id\":" + Quote(request_id) + "}";
  const grpc::ByteBuffer request = StringToByteBuffer(body);

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
  grpc::CompletionQueue cq;
  grpc::ByteBuffer response;
  grpc::Status status;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> reader =
      stub.PrepareUnaryCall(&context, kMethod, request, &cq);
  if (!reader) {
    result.error = Quote("could not create the call");
    result.code = static_cast<int>(grpc::StatusCode::INTERNAL);
    return result;
  }
  reader->StartCall();
  int finish_tag = 1;
  reader->Finish(&response, &status, &finish_tag);

  // The call deadline ends the call; the queue wait has its own bound on top of it.
  void* tag = nullptr;
  bool ok = false;
  const auto wait_until = std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms + 2000);
  const grpc::CompletionQueue::NextStatus next = cq.AsyncNext(&tag, &ok, wait_until);
  if (next != grpc::CompletionQueue::GOT_EVENT || tag != &finish_tag) {
    context.TryCancel();
    // Drain the cancelled call (bounded again) before the queue is destroyed.
    if (next == grpc::CompletionQueue::TIMEOUT) {
      cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + std::chrono::seconds(2));
    }
    result.error = Quote("completion queue did not deliver the call result in time");
    result.code = static_cast<int>(grpc::StatusCode::DEADLINE_EXCEEDED);
  } else if (!status.ok()) {
    result.error = Quote(status.error_message());
    result.code = static_cast<int>(status.error_code());
  } else {
    const std::string reply = ByteBufferToString(response);
    const auto echoed = RawField(reply, "request_id");
    result.inventory = RawField(reply, "inventory").value_or("null");
    result.port = RawField(reply, "port").value_or("null");
    result.ok = echoed.has_value() && *echoed == Quote(request_id);
    if (!result.ok) result.error = Quote("reply does not echo the request_id: " + reply);
  }
  cq.Shutdown();
  while (cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + std::chrono::seconds(2)) ==
         grpc::CompletionQueue::GOT_EVENT) {
  }
  result.elapsed_ms = static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count());
  return result;
}

}  // namespace

int main() {
  const char* target_env = std::getenv("CXDS_TEACHING_TARGET");
  const std::string target = (target_env != nullptr && *target_env != '\0') ? target_env : "xds:///quote";
  const long deadline_ms = EnvNumber("CXDS_TEACHING_DEADLINE_MS", 3000);
  const long max_seconds = EnvNumber("CXDS_TEACHING_MAX_SECONDS", 900);

  if (max_seconds > 0) {
    std::thread([max_seconds] {
      std::this_thread::sleep_for(std::chrono::seconds(max_seconds));
      std::fprintf(stderr, "client_cpp: max lifetime of %lds reached\n", max_seconds);
      std::_Exit(3);
    }).detach();
  }

  std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  // Leave IDLE right away so the ADS stream is opened before the first call.
  channel->GetState(/*try_to_connect=*/true);
  grpc::GenericStub stub(channel);

  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::vector<std::string> parts;
    for (std::string word; in >> word;) parts.push_back(word);
    if (parts.empty()) continue;
    if (parts[0] == "call" && parts.size() == 2) {
      const CallResult r = CallOnce(stub, parts[1], deadline_ms);
      std::cout << "{\"request_id\":" << Quote(parts[1]) << ",\"ok\":" << (r.ok ? "true" : "false")
                << ",\"inventory\":" << r.inventory << ",\"port\":" << r.port << ",\"error\":" << r.error
                << ",\"code\":" << r.code << ",\"elapsed_ms\":" << r.elapsed_ms << "}" << std::endl;
    } else if (parts[0] == "quit") {
      break;
    } else {
      std::cerr << "client_cpp: ignoring unknown command: " << line << std::endl;
    }
  }
  return 0;
}
