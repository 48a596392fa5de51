// Which ConfigSource a daemon reads, from a URL (`cxds serve --config-source`):
//   dir://PATH                  a watched directory (DirectorySource)
//   etcd://HOST:PORT/PREFIX     keys under PREFIX in etcd (EtcdSource), over TLS when a CA is set
// An empty URL is dir://`config_dir`.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/scheduler.h"
#include "config/config_source.h"
#include "config/dir_source.h"
#include "config/etcd_source.h"

namespace cxds {

// PEM files for etcd over TLS (see EtcdTls): `ca` set turns TLS on; `cert` and `key` together
// answer etcd's --client-cert-auth.
struct EtcdTlsFiles {
  std::string ca;
  std::string cert;
  std::string key;
};

struct ConfigSourceSettings {
  std::string url;  // empty: dir://`config_dir`
  std::string config_dir = "examples/mesh";
  DirectorySource::Options directory;  // for dir://
  EtcdSource::Options etcd;            // for etcd://
  EtcdTlsFiles etcd_tls;
};

// The source `settings` name; not started. An unknown scheme, a malformed etcd URL or an
// unreadable TLS file is an error naming it.
absl::StatusOr<std::unique_ptr<ConfigSource>> OpenConfigSource(const ConfigSourceSettings& settings,
                                                               Scheduler& scheduler);

}  // namespace cxds
