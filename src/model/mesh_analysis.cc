#include "model/mesh_analysis.h"

#include <map>
#include <memory>
#include <set>

#include "common/strings.h"
#include "model/mesh_model.h"

namespace cxds {

namespace {

// Routes to hosts that are not services, or to ports they do not have: requests taking them
// fail, and a proxyless client waits for a cluster that never comes.
void MissingDestinations(const ObjectMap& served, const MeshContext& mesh, const std::string& suffix,
                         std::vector<ConfigWarning>& out) {
  for (const auto& [key, stored] : served) {
    const auto* vs = std::get_if<VirtualService>(&stored->object);
    if (vs == nullptr) continue;
    for (size_t i = 0; i < vs->http.size(); ++i) {
      for (size_t j = 0; j < vs->http[i].route.size(); ++j) {
        const HttpRouteDestination& d = vs->http[i].route[j];
        const std::string host = ResolveHost(d.host, vs->meta.namespace_name, suffix);
        const std::string field = StrCat("spec.http[", i, "].route[", j, "].destination");
        const ServiceInfo* service = mesh.FindService(host);
        if (service == nullptr) {
          out.push_back({key, field + ".host", "IST0101",
                         StrCat("host ", host,
                                " is not defined by any Service or ServiceEntry: requests routed here "
                                "fail")});
        } else if (d.port != 0 && std::none_of(service->ports.begin(), service->ports.end(),
                                               [&](const ServicePort& p) { return p.number == d.port; })) {
          out.push_back({key, field + ".port.number", "IST0101",
                         StrCat("port ", d.port, " is not a port of ", host, ": requests routed here fail")});
        }
      }
    }
  }
}

// Service ports without endpoints, by the same rules as MeshModel's endpoint index: a slice
// port backs the Service port of its name (or the only one), ready endpoints only; a
// ServiceEntry has its inline endpoints or the WorkloadEntries it selects in its namespace.
void NoInstances(const ObjectMap& served, const std::string& suffix, std::vector<ConfigWarning>& out) {
  std::map<std::string, std::set<std::string>> slice_ports;       // host -> port names with endpoints
  std::map<std::string, std::vector<const LabelMap*>> workloads;  // namespace -> labels
  for (const auto& [key, stored] : served) {
    if (const auto* slice = std::get_if<EndpointSlice>(&stored->object)) {
      const bool any = std::any_of(slice->endpoints.begin(), slice->endpoints.end(),
                                   [](const auto& e) { return e.ready && !e.addresses.empty(); });
      if (!any) continue;
      auto& names = slice_ports[StrCat(slice->service_name, ".", slice->meta.namespace_name, ".svc.", suffix)];
      for (const EndpointSlice::Port& port : slice->ports) names.insert(port.name);
    } else if (const auto* we = std::get_if<WorkloadEntry>(&stored->object)) {
      workloads[we->meta.namespace_name].push_back(&we->spec.labels);
    }
  }
  const auto report = [&](const ConfigKey& key, size_t i, const std::string& host, uint32_t port, const char* why) {
    out.push_back({key, StrCat("spec.ports[", i, "]"), "pilot_eds_no_instances",
                   StrCat("host ", host, " port ", port, " has no endpoints (", why, ")")});
  };
  for (const auto& [key, stored] : served) {
    if (const auto* svc = std::get_if<K8sService>(&stored->object)) {
      const std::string host = StrCat(svc->meta.name, ".", svc->meta.namespace_name, ".svc.", suffix);
      auto names = slice_ports.find(host);
      for (size_t i = 0; i < svc->ports.size(); ++i) {
        const bool backed =
            names != slice_ports.end() &&
            (svc->ports.size() == 1 ? !names->second.empty() : names->second.contains(svc->ports[i].name));
        if (!backed) {
          report(key, i, host, svc->ports[i].number,
                 StrCat("no ready endpoint in an EndpointSlice labelled kubernetes.io/service-name: ", svc->meta.name,
                        " with a port named \"", svc->ports[i].name, "\"")
                     .c_str());
        }
      }
    } else if (const auto* se = std::get_if<ServiceEntry>(&stored->object)) {
      bool any = !se->endpoints.empty();
      if (!any && se->workload_selector.has_value()) {
        auto in_namespace = workloads.find(se->meta.namespace_name);
        any = in_namespace != workloads.end() &&
              std::any_of(in_namespace->second.begin(), in_namespace->second.end(),
                          [&](const LabelMap* labels) { return LabelsMatch(*se->workload_selector, *labels); });
      }
      if (any) continue;
      for (const std::string& host : se->hosts) {
        for (size_t i = 0; i < se->ports.size(); ++i) {
          report(key, i, host, se->ports[i].number,
                 se->workload_selector.has_value() ? "its workloadSelector selects no WorkloadEntry in its namespace"
                                                   : "no spec.endpoints");
        }
      }
    }
  }
}

}  // namespace

Analyzer MeshAnalyzer(std::string domain_suffix) {
  return [suffix = std::move(domain_suffix)](const ObjectMap& served) {
    // A context over `served` for this call only: the aliasing pointer owns nothing.
    const MeshContext mesh("", 0, absl::UnixEpoch(), std::shared_ptr<const ObjectMap>(std::shared_ptr<void>(), &served),
                           suffix);
    std::vector<ConfigWarning> out = mesh.findings();
    MissingDestinations(served, mesh, suffix, out);
    NoInstances(served, suffix, out);
    return out;
  };
}

const std::vector<std::string>& MeshAnalysisCodes() {
  static const std::vector<std::string> kCodes = {"pilot_vservice_dup_domain",
                                                  "pilot_duplicate_envoy_clusters",
                                                  "pilot_eds_no_instances",
                                                  "pilot_conflict_outbound_listener_tcp_over_current_tcp",
                                                  "pilot_conflict_outbound_listener_tcp_over_current_http",
                                                  "IST0101"};
  return kCodes;
}

}  // namespace cxds
