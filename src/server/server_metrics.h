// The xDS server's metrics, under istiod's names where the meaning is the same:
//   pilot_xds{version}                 connected streams (gauge), by client version
//   pilot_xds_pushes{type}             responses sent, by type (cds, eds, lds, rds, ...)
//   pilot_xds_config_size_bytes{type}  resource bytes per response
//   pilot_total_xds_rejects{type}      NACKs
//   pilot_xds_expired_nonce{type}      requests with a stale nonce
//   pilot_proxy_convergence_time       from a push's first change to the proxy's ACK of the
//                                      last response of that push (istiod stops at the send)
//   cxds_xds_acks{type}                ACKs
//   cxds_xds_missing_names{type}       names a stream subscribed to that its configuration does
//                                      not have (each counted once per stream)
// Per-type children are looked up once per type and kept (every response would otherwise
// pay a registry lookup). Thread-safe; a null registry means no metrics.
//
// Label sets are bounded (issue 11): `type` takes only the types cxds sends (every per-type
// call is for a response it sent), and `version` comes from the client (user_agent_version),
// so only the first kMaxClientVersions distinct values get their own label; every later one
// is counted under "other". A version keeps the label it got, so a stream's open and close
// always move the same gauge.
#pragma once

#include <cctype>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"
#include "metrics/metrics.h"
#include "protocol/type_url.h"

namespace cxds {

class ServerMetrics {
 public:
  static constexpr size_t kMaxClientVersions = 32;

  explicit ServerMetrics(MetricsRegistry* registry) : registry_(registry) {
    if (registry_ != nullptr) {
      convergence_ = &registry_->GetHistogram(
          "pilot_proxy_convergence_time",
          "From a push's earliest change to the proxy's ACK of every response of that push (s).", FineTimeBuckets());
    }
  }

  void StreamOpened(const std::string& version) { Connected(version, 1); }
  void StreamClosed(const std::string& version) { Connected(version, -1); }
  void Sent(std::string_view type_url, size_t bytes) {
    if (PerType* t = Of(type_url)) {
      t->pushes->Add();
      t->size->Observe(static_cast<double>(bytes));
    }
  }
  void Acked(std::string_view type_url) {
    if (PerType* t = Of(type_url)) t->acks->Add();
  }
  void Rejected(std::string_view type_url) {
    if (PerType* t = Of(type_url)) t->rejects->Add();
  }
  void ExpiredNonce(std::string_view type_url) {
    if (PerType* t = Of(type_url)) t->expired_nonces->Add();
  }
  // Only for a type the stream's configuration has (so `type` stays bounded).
  void MissingName(std::string_view type_url) {
    if (PerType* t = Of(type_url)) t->missing_names->Add();
  }
  void Converged(double seconds) const {
    if (convergence_ != nullptr) convergence_->Observe(seconds);
  }

 private:
  struct PerType {
    Counter* pushes;
    Histogram* size;
    Counter* acks;
    Counter* rejects;
    Counter* expired_nonces;
    Counter* missing_names;
  };

  PerType* Of(std::string_view type_url) {
    if (registry_ == nullptr) return nullptr;
    MutexLock lock(&mu_);
    auto it = types_.find(type_url);
    if (it != types_.end()) return &it->second;
    std::string name(ShortTypeName(type_url));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const Labels labels{{"type", name}};
    static const std::vector<double> kSizeBuckets{1, 1e4, 1e5, 1e6, 1e7, 4e7};
    PerType t{
        &registry_->GetCounter("pilot_xds_pushes", "xDS responses sent, by type.", labels),
        &registry_->GetHistogram("pilot_xds_config_size_bytes", "Resource bytes per xDS response.", kSizeBuckets,
                                 labels),
        &registry_->GetCounter("cxds_xds_acks", "ACKs received, by type.", labels),
        &registry_->GetCounter("pilot_total_xds_rejects", "NACKs received, by type.", labels),
        &registry_->GetCounter("pilot_xds_expired_nonce", "Requests carrying a stale nonce, by type.", labels),
        &registry_->GetCounter("cxds_xds_missing_names",
                               "Names a stream subscribed to that its configuration does not have, by type.", labels)};
    return &types_.emplace(std::string(type_url), t).first->second;
  }

  void Connected(const std::string& version, int delta) {
    if (registry_ == nullptr) return;
    std::string label = version;
    {
      MutexLock lock(&mu_);
      if (!versions_.contains(version)) {
        if (versions_.size() < kMaxClientVersions) {
          versions_.insert(version);
        } else {
          label = "other";
        }
      }
    }
    registry_->GetGauge("pilot_xds", "Connected xDS streams, by client version.", {{"version", label}}).Add(delta);
  }

  MetricsRegistry* const registry_;
  Histogram* convergence_ = nullptr;
  Mutex mu_;
  std::map<std::string, PerType, std::less<>> types_ ABSL_GUARDED_BY(mu_);  // children never move
  std::set<std::string> versions_ ABSL_GUARDED_BY(mu_);                     // with a label of their own
};

}  // namespace cxds
