// The xDS server's metrics, under istiod's names where the meaning is the same:
//   pilot_xds{version}                 connected streams (gauge), by client version
//   pilot_xds_pushes{type}             responses sent, by type (cds, eds, lds, rds, ...)
//   pilot_xds_config_size_bytes{type}  resource bytes per response
//   pilot_total_xds_rejects{type}      NACKs
//   pilot_xds_expired_nonce{type}      requests with a stale nonce
//   pilot_proxy_convergence_time       from a push's first change to the proxy's ACK of the
//                                      last response of that push (istiod stops at the send)
//   cxds_xds_acks{type}                ACKs
// Thread-safe; null registry means no metrics.
#pragma once

#include <string>
#include <string_view>

#include "admin/metrics.h"
#include "protocol/type_url.h"

namespace cxds {

class ServerMetrics {
 public:
  explicit ServerMetrics(MetricsRegistry* registry) : registry_(registry) {
    if (registry_ != nullptr) {
      convergence_ = &registry_->GetHistogram(
          "pilot_proxy_convergence_time",
          "From a push's earliest change to the proxy's ACK of every response of that push (s).",
          FineTimeBuckets());
    }
  }

  void StreamOpened(const std::string& version) { Connected(version, 1); }
  void StreamClosed(const std::string& version) { Connected(version, -1); }
  void Sent(std::string_view type_url, size_t bytes) const {
    if (registry_ == nullptr) return;
    const Labels labels{{"type", Short(type_url)}};
    registry_->GetCounter("pilot_xds_pushes", "xDS responses sent, by type.", labels).Add();
    registry_->GetHistogram("pilot_xds_config_size_bytes", "Resource bytes per xDS response.", SizeBuckets(), labels)
        .Observe(static_cast<double>(bytes));
  }
  void Acked(std::string_view type_url) const {
    if (registry_ != nullptr) registry_->GetCounter("cxds_xds_acks", "ACKs received, by type.", {{"type", Short(type_url)}}).Add();
  }
  void Rejected(std::string_view type_url) const {
    if (registry_ != nullptr) {
      registry_->GetCounter("pilot_total_xds_rejects", "NACKs received, by type.", {{"type", Short(type_url)}}).Add();
    }
  }
  void ExpiredNonce(std::string_view type_url) const {
    if (registry_ != nullptr) {
      registry_->GetCounter("pilot_xds_expired_nonce", "Requests carrying a stale nonce, by type.",
                            {{"type", Short(type_url)}})
          .Add();
    }
  }
  void Converged(double seconds) const {
    if (convergence_ != nullptr) convergence_->Observe(seconds);
  }

 private:
  static std::string Short(std::string_view type_url) {
    std::string name(ShortTypeName(type_url));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name;
  }
  static const std::vector<double>& SizeBuckets() {
    static const std::vector<double> buckets{1, 1e4, 1e5, 1e6, 1e7, 4e7};
    return buckets;
  }
  void Connected(const std::string& version, int delta) {
    if (registry_ == nullptr) return;
    registry_->GetGauge("pilot_xds", "Connected xDS streams, by client version.", {{"version", version}}).Add(delta);
  }

  MetricsRegistry* const registry_;
  Histogram* convergence_ = nullptr;
};

}  // namespace cxds
