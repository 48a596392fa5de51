// EtcdClient: the part of etcd's v3 gRPC API (KV and Watch, generated from the pinned etcd
// .proto files) that the etcd config source and `cxds apply/get/delete` use.
//
// Config lives under a prefix, one document per key: PREFIX/KIND/NAMESPACE/NAME (EtcdKeyFor).
// Everything read from etcd is bounded: a range is read in pages at one revision, with a cap
// on keys and on the size of a message; every unary call has a deadline.
//
// Threading: EtcdClient is thread-safe (a gRPC channel and stubs). An EtcdWatch is used by
// one thread (Next), and Cancel may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "push/push_request.h"

namespace grpc {
class Channel;
class ClientContext;
}  // namespace grpc

namespace cxds {

// etcd://HOST:PORT/PREFIX (the prefix is required, without a trailing slash).
struct EtcdLocation {
  std::string address;  // host:port for gRPC
  std::string prefix;   // "/cxds" form: begins with '/', no trailing '/'
};
absl::StatusOr<EtcdLocation> ParseEtcdUrl(std::string_view url);
// A prefix as users write it ("cxds", "/cxds/", "/cxds") in the stored form ("/cxds").
absl::StatusOr<std::string> NormalizeEtcdPrefix(std::string_view prefix);

// PREFIX/KIND/NAMESPACE/NAME. Kubernetes names and namespaces never contain '/'.
std::string EtcdKeyFor(std::string_view prefix, const ConfigKey& key);
// The inverse; an error naming the key if it is not of that shape under `prefix`.
absl::StatusOr<ConfigKey> ConfigKeyFromEtcdKey(std::string_view prefix, std::string_view etcd_key);

struct EtcdKeyValue {
  std::string key;
  std::string value;
  int64_t mod_revision = 0;
};

struct EtcdRangeResult {
  int64_t revision = 0;  // the store revision the whole range was read at
  std::vector<EtcdKeyValue> kvs;
};

// One write of a transaction: a put, or (no value) a delete of exactly this key.
struct EtcdWrite {
  std::string key;
  std::optional<std::string> value;
};

struct EtcdWatchEvent {
  std::string key;
  std::optional<std::string> value;  // nullopt: deleted
  int64_t mod_revision = 0;
};

// What one watch response says.
struct EtcdWatchBatch {
  // The store's revision when etcd sent this. While a watch catches up from an older revision
  // the events may still lag it: what was delivered is known from the events' revisions.
  int64_t revision = 0;
  bool created = false;                // etcd confirms the watch (no events)
  std::vector<EtcdWatchEvent> events;  // in revision order
  // The watch could not start (or continue) because its revision is compacted away; the
  // stream is over, and the caller must read everything again.
  int64_t compact_revision = 0;
};

class EtcdWatch {
 public:
  ~EtcdWatch();
  // The next response (its fragments joined): the creation, events, or the compaction
  // notice. Unavailable when the stream ends: etcd gone, the watch cancelled, or Cancel().
  // ResourceExhausted if one response is over the client's max_message_bytes (the stream is
  // then of no further use: read everything instead).

  absl::StatusOr<EtcdWatchBatch> Next();
  void Cancel();

 private:
  friend class EtcdClient;
  struct Impl;
  explicit EtcdWatch(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// TLS to etcd: the CA that signed etcd's certificate and, for etcd's --client-cert-auth, a
// client certificate and key, all PEM. Read once, when the client is made.
struct EtcdTls {
  std::string ca_pem;
  std::string cert_pem;  // empty: no client certificate
  std::string key_pem;
};
// Reads the three files (bounded); an error names the file. `cert_file` and `key_file` go
// together; an empty `ca_file` with no others means plaintext (nullopt).
absl::StatusOr<std::optional<EtcdTls>> ReadEtcdTls(const std::string& ca_file, const std::string& cert_file,
                                                   const std::string& key_file);

class EtcdClient {
 public:
  struct Options {
    absl::Duration deadline = absl::Seconds(5);  // per unary call
    size_t page_size = 500;                      // keys per Range page
    size_t max_keys = 100'000;                   // a prefix with more is refused
    // Largest gRPC message read: a Range page over it is read again in smaller pages. Values
    // themselves are bounded by etcd (1.5 MiB by default) and by the parser's limits.
    int max_message_bytes = 64 << 20;
    std::optional<EtcdTls> tls;  // none: plaintext (loopback or a trusted network only)
  };
  explicit EtcdClient(std::string address) : EtcdClient(std::move(address), Options{}) {}
  EtcdClient(std::string address, Options options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  const std::string& address() const { return address_; }

  // Every key under `prefix` + "/", read at one revision (`revision` 0: the newest).
  // Unavailable if etcd cannot be reached; OutOfRange if `revision` is compacted;
  // ResourceExhausted past max_keys.
  absl::StatusOr<EtcdRangeResult> RangePrefix(std::string_view prefix, int64_t revision = 0) const;
  // All writes in one transaction: all or nothing. Returns the revision it made.
  absl::StatusOr<int64_t> Commit(const std::vector<EtcdWrite>& writes) const;
  // Compacts history up to `revision` (tests and operators).
  absl::Status Compact(int64_t revision) const;
  // Watches every key under `prefix` + "/" from `start_revision` on.
  absl::StatusOr<std::unique_ptr<EtcdWatch>> Watch(std::string_view prefix, int64_t start_revision) const;

 private:
  struct Stubs;
  const std::string address_;
  const Options options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Stubs> stubs_;
};

}  // namespace cxds
