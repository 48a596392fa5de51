#include "config/etcd_client.h"

#include <chrono>

#include "common/files.h"
#include "common/strings.h"
#include "etcd/rpc.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace cxds {
namespace {

// The end of the range of keys that begin with `key_prefix`: the prefix with its last byte
// incremented (etcd's convention), e.g. "/cxds/" -> "/cxds0".
std::string RangeEnd(std::string key_prefix) {
  key_prefix.back() = static_cast<char>(key_prefix.back() + 1);
  return key_prefix;
}

absl::StatusCode ToAbslCode(grpc::StatusCode code) { return static_cast<absl::StatusCode>(code); }

absl::Status FromGrpc(const grpc::Status& status, std::string_view what, const std::string& address) {
  return absl::Status(ToAbslCode(status.error_code()),
                      StrCat("etcd at ", address, ": ", what, ": ", status.error_message()));
}

void SetDeadline(grpc::ClientContext& context, absl::Duration deadline) {
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(deadline));
}

bool SegmentOk(std::string_view s) { return !s.empty() && s.find('/') == std::string_view::npos; }

}  // namespace

absl::StatusOr<std::string> NormalizeEtcdPrefix(std::string_view prefix) {
  std::string out(prefix);
  while (!out.empty() && out.back() == '/') out.pop_back();
  if (out.empty()) return absl::InvalidArgumentError("the etcd prefix is empty: name one, e.g. /cxds");
  if (out.front() != '/') out.insert(out.begin(), '/');
  for (char c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError("the etcd prefix contains a control character");
    }
  }
  return out;
}

absl::StatusOr<EtcdLocation> ParseEtcdUrl(std::string_view url) {
  constexpr std::string_view kScheme = "etcd://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return absl::InvalidArgumentError(StrCat("\"", url, "\" is not an etcd URL (etcd://HOST:PORT/PREFIX)"));
  }
  std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) {
    return absl::InvalidArgumentError(StrCat("\"", url, "\" names no HOST:PORT and /PREFIX (etcd://HOST:PORT/PREFIX)"));
  }
  absl::StatusOr<std::string> prefix = NormalizeEtcdPrefix(rest.substr(slash));
  if (!prefix.ok()) return absl::InvalidArgumentError(StrCat("\"", url, "\": ", prefix.status().message()));
  return EtcdLocation{std::string(rest.substr(0, slash)), *std::move(prefix)};
}

std::string EtcdKeyFor(std::string_view prefix, const ConfigKey& key) {
  return StrCat(prefix, "/", key.kind, "/", key.namespace_name, "/", key.name);
}

absl::StatusOr<ConfigKey> ConfigKeyFromEtcdKey(std::string_view prefix, std::string_view etcd_key) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(
        StrCat("etcd key \"", etcd_key, "\" is not of the form ", prefix, "/KIND/NAMESPACE/NAME"));
  };
  if (etcd_key.size() <= prefix.size() + 1 || etcd_key.substr(0, prefix.size()) != prefix ||
      etcd_key[prefix.size()] != '/') {
    return bad();
  }
  std::string_view rest = etcd_key.substr(prefix.size() + 1);
  std::vector<std::string_view> parts;
  for (size_t pos = 0;;) {
    const size_t next = rest.find('/', pos);
    parts.push_back(rest.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos));
    if (next == std::string_view::npos || parts.size() > 3) break;
    pos = next + 1;
  }
  if (parts.size() != 3 || !SegmentOk(parts[0]) || !SegmentOk(parts[1]) || !SegmentOk(parts[2])) return bad();
  return ConfigKey{std::string(parts[0]), std::string(parts[1]), std::string(parts[2])};
}

absl::StatusOr<std::optional<EtcdTls>> ReadEtcdTls(const std::string& ca_file, const std::string& cert_file,
                                                   const std::string& key_file) {
  if (ca_file.empty() && cert_file.empty() && key_file.empty()) return std::optional<EtcdTls>();
  if (ca_file.empty()) {
    return absl::InvalidArgumentError("--etcd-cert/--etcd-key need --etcd-ca (the CA that signed etcd's certificate)");
  }
  if (cert_file.empty() != key_file.empty()) {
    return absl::InvalidArgumentError("--etcd-cert and --etcd-key go together");
  }
  constexpr size_t kMaxPemBytes = 1 << 20;
  EtcdTls tls;
  const std::pair<const std::string*, std::string*> files[] = {
      {&ca_file, &tls.ca_pem}, {&cert_file, &tls.cert_pem}, {&key_file, &tls.key_pem}};
  for (const auto& [path, pem] : files) {
    if (path->empty()) continue;
    absl::StatusOr<std::string> read = ReadSmallFile(*path, kMaxPemBytes, "etcd TLS file");
    if (!read.ok()) return read.status();
    if (read->find("-----BEGIN ") == std::string::npos) {
      return absl::InvalidArgumentError(StrCat(*path, ": not PEM (no -----BEGIN line)"));
    }
    *pem = *std::move(read);
  }
  return std::optional<EtcdTls>(std::move(tls));
}

struct EtcdClient::Stubs {
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch;
};

struct EtcdWatch::Impl {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>> stream;
  std::string address;
  size_t max_batch_bytes = 0;  // fragments of one response, together
};

EtcdClient::EtcdClient(std::string address, Options options)
    : address_(std::move(address)), options_(options), stubs_(std::make_unique<Stubs>()) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options_.max_message_bytes);
  // A watch on a store that went away silently (a partition, not a reset) is noticed within
  // about 15 s, not at the next TCP timeout.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Reconnect promptly when etcd is back: the source retries on its own schedule.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2'000);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (options_.tls.has_value()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options_.tls->ca_pem;
    ssl.pem_cert_chain = options_.tls->cert_pem;
    ssl.pem_private_key = options_.tls->key_pem;
    credentials = grpc::SslCredentials(ssl);
  }
  channel_ = grpc::CreateCustomChannel(address_, credentials, args);
  stubs_->kv = etcdserverpb::KV::NewStub(channel_);
  stubs_->watch = etcdserverpb::Watch::NewStub(channel_);
}

EtcdClient::~EtcdClient() = default;

absl::StatusOr<EtcdRangeResult> EtcdClient::RangePrefix(std::string_view prefix, int64_t revision) const {
  const std::string key_prefix = StrCat(prefix, "/");
  EtcdRangeResult result;
  result.revision = revision;
  std::string from = key_prefix;
  int64_t page = static_cast<int64_t>(options_.page_size);
  for (;;) {
    etcdserverpb::RangeRequest request;
    request.set_key(from);
    request.set_range_end(RangeEnd(key_prefix));
    request.set_limit(page);
    request.set_revision(result.revision);  // every page at the first page's revision
    etcdserverpb::RangeResponse response;
    grpc::ClientContext context;
    SetDeadline(context, options_.deadline);
    grpc::Status status = stubs_->kv->Range(&context, request, &response);
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED && page > 1) {
      page /= 2;  // a page of large values over the message cap: smaller pages
      continue;
    }
    if (!status.ok()) return FromGrpc(status, StrCat("reading ", key_prefix), address_);
    if (result.revision == 0) result.revision = response.header().revision();
    for (const mvccpb::KeyValue& kv : response.kvs()) {
      if (result.kvs.size() >= options_.max_keys) {
        return absl::ResourceExhaustedError(StrCat("etcd at ", address_, ": more than ", options_.max_keys,
                                                   " keys under ", key_prefix, " (the limit)"));
      }
      result.kvs.push_back({kv.key(), kv.value(), kv.mod_revision()});
    }
    if (!response.more() || response.kvs().empty()) break;
    from = response.kvs(response.kvs_size() - 1).key();
    from.push_back('\0');  // the next key after the last one read
  }
  return result;
}

absl::StatusOr<int64_t> EtcdClient::Commit(const std::vector<EtcdWrite>& writes) const {
  etcdserverpb::TxnRequest request;
  for (const EtcdWrite& write : writes) {
    etcdserverpb::RequestOp* op = request.add_success();
    if (write.value.has_value()) {
      op->mutable_request_put()->set_key(write.key);
      op->mutable_request_put()->set_value(*write.value);
    } else {
      op->mutable_request_delete_range()->set_key(write.key);
    }
  }
  etcdserverpb::TxnResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.deadline);
  grpc::Status status = stubs_->kv->Txn(&context, request, &response);
  if (!status.ok()) return FromGrpc(status, StrCat("a transaction of ", writes.size(), " writes"), address_);
  return response.header().revision();
}

absl::Status EtcdClient::Compact(int64_t revision) const {
  etcdserverpb::CompactionRequest request;
  request.set_revision(revision);
  request.set_physical(true);
  etcdserverpb::CompactionResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.deadline);
  grpc::Status status = stubs_->kv->Compact(&context, request, &response);
  if (!status.ok()) return FromGrpc(status, StrCat("compacting to ", revision), address_);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<EtcdWatch>> EtcdClient::Watch(std::string_view prefix, int64_t start_revision) const {
  auto impl = std::make_unique<EtcdWatch::Impl>();
  impl->address = address_;
  impl->max_batch_bytes = static_cast<size_t>(options_.max_message_bytes);
  impl->stream = stubs_->watch->Watch(&impl->context);
  etcdserverpb::WatchRequest request;
  const std::string key_prefix = StrCat(prefix, "/");
  request.mutable_create_request()->set_key(key_prefix);
  request.mutable_create_request()->set_range_end(RangeEnd(key_prefix));
  request.mutable_create_request()->set_start_revision(start_revision);
  // A large response (a watch catching up over many revisions) comes in fragments, each
  // bounded by etcd's request size limit, rather than as one message over our receive cap.
  request.mutable_create_request()->set_fragment(true);
  if (!impl->stream->Write(request)) {
    grpc::Status status = impl->stream->Finish();
    return FromGrpc(status, StrCat("watching ", key_prefix), address_);
  }
  return std::unique_ptr<EtcdWatch>(new EtcdWatch(std::move(impl)));
}

EtcdWatch::EtcdWatch(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EtcdWatch::~EtcdWatch() {
  impl_->context.TryCancel();
  if (impl_->stream == nullptr) return;  // already finished
  // Finish after cancellation returns promptly; it must be called to release the call.
  etcdserverpb::WatchResponse ignored;
  while (impl_->stream->Read(&ignored)) {
  }
  impl_->stream->Finish().IgnoreError();
}

void EtcdWatch::Cancel() { impl_->context.TryCancel(); }

absl::StatusOr<EtcdWatchBatch> EtcdWatch::Next() {
  if (impl_->stream == nullptr) {
    return absl::UnavailableError(StrCat("etcd at ", impl_->address, ": the watch stream ended"));
  }
  etcdserverpb::WatchResponse response;
  EtcdWatchBatch batch;  // one response, or the fragments of one
  size_t batch_bytes = 0;
  while (impl_->stream->Read(&response)) {
    batch.revision = response.header().revision();
    if (response.compact_revision() > 0) {
      batch.compact_revision = response.compact_revision();
      return batch;
    }
    if (response.canceled()) {
      return absl::UnavailableError(
          StrCat("etcd at ", impl_->address, ": the watch was cancelled: ", response.cancel_reason()));
    }
    batch.created = response.created();
    for (const mvccpb::Event& event : response.events()) {
      EtcdWatchEvent out{event.kv().key(), std::nullopt, event.kv().mod_revision()};
      if (event.type() == mvccpb::Event::Put) out.value = event.kv().value();
      batch_bytes += out.key.size() + (out.value.has_value() ? out.value->size() : 0);
      batch.events.push_back(std::move(out));
    }
    if (batch_bytes > impl_->max_batch_bytes) {
      return absl::ResourceExhaustedError(StrCat("etcd at ", impl_->address, ": a watch response of over ",
                                                 impl_->max_batch_bytes, " bytes (the limit)"));
    }
    if (response.fragment()) continue;  // the rest of this response follows
    return batch;
  }
  grpc::Status status = impl_->stream->Finish();
  // Finish may only be called once: the stream is over, a later Next says so again.
  impl_->stream.reset();
  if (status.ok()) return absl::UnavailableError(StrCat("etcd at ", impl_->address, ": the watch stream ended"));
  return FromGrpc(status, "the watch stream", impl_->address);
}

}  // namespace cxds
