#include "config/source_url.h"

#include "common/strings.h"

namespace cxds {

absl::StatusOr<std::unique_ptr<ConfigSource>> OpenConfigSource(const ConfigSourceSettings& settings,
                                                               Scheduler& scheduler) {
  const std::string& url = settings.url;
  if (url.starts_with("etcd://")) {
    absl::StatusOr<EtcdLocation> location = ParseEtcdUrl(url);
    if (!location.ok()) return location.status();
    absl::StatusOr<std::optional<EtcdTls>> tls =
        ReadEtcdTls(settings.etcd_tls.ca, settings.etcd_tls.cert, settings.etcd_tls.key);
    if (!tls.ok()) return tls.status();
    EtcdSource::Options etcd = settings.etcd;
    etcd.client.tls = *std::move(tls);
    return std::make_unique<EtcdSource>(*std::move(location), std::move(etcd));
  }
  std::string dir = settings.config_dir;
  if (url.starts_with("dir://")) {
    dir = url.substr(6);
  } else if (!url.empty()) {
    return absl::InvalidArgumentError(
        StrCat("--config-source \"", url, "\" is neither dir://PATH nor etcd://HOST:PORT/PREFIX"));
  }
  return std::make_unique<DirectorySource>(dir, scheduler, settings.directory);
}

}  // namespace cxds
