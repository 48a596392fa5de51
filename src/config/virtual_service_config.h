// networking.istio.io VirtualService and the route values it is made of (matches, destinations,
// header operations, faults). Plain values, as the rest of config/mesh_config.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "config/object_meta.h"

namespace cxds {

struct StringMatch {
  enum class Kind { kExact, kPrefix, kRegex } kind = Kind::kExact;
  std::string value;
};

// Header manipulation (Istio's Headers): request and response, set (replace), add (append),
// remove.
struct HeaderOperations {
  std::map<std::string, std::string> set;
  std::map<std::string, std::string> add;
  std::vector<std::string> remove;
  bool empty() const { return set.empty() && add.empty() && remove.empty(); }
};
struct HeaderManipulation {
  HeaderOperations request;
  HeaderOperations response;
  bool empty() const { return request.empty() && response.empty(); }
};

struct HttpRouteDestination {
  std::string host;
  std::string subset;
  uint32_t port = 0;  // 0: the service's only port / the listener's port
  uint32_t weight = 0;
  HeaderManipulation headers;  // route[].headers: for requests sent to this destination
};

// HTTPFaultInjection: faults a proxy injects itself, before the request leaves it. Percentages
// are of requests, 0 to 100; unset is 0, as in Istio ("no request is delayed").
struct FaultInjection {
  struct Delay {
    absl::Duration fixed_delay;
    double percent = 0;  // `percentage`: istiod sends it in millionths
    // Set instead when `percentage` is not given: the deprecated integer `percent` as written (0
    // when neither is), which istiod sends as uint32 hundredths.
    std::optional<int32_t> whole_percent;
  };
  struct Abort {
    uint32_t http_status = 0;             // one of http_status and grpc_status
    std::optional<uint32_t> grpc_status;  // the code of a gRPC status name (UNAVAILABLE: 14)
    // 0 without `percentage`, as Istio reads it. istiod then sends no percentage, which Envoy
    // reads as 0% but grpc-js refuses (the whole route configuration): cxds sends 0%.
    double percent = 0;
  };
  std::optional<Delay> delay;
  std::optional<Abort> abort;
};

struct HttpRoute {
  std::string name;
  struct Match {
    std::optional<StringMatch> uri;
    bool ignore_uri_case = false;
    std::map<std::string, StringMatch> headers;
    std::map<std::string, StringMatch> without_headers;  // must not match
    // Pseudo-headers: proxyless gRPC has none to match (its method is always POST), so routes
    // matching them are left out for gRPC nodes (analysis: cxds_grpc_ignores).
    std::optional<StringMatch> method, authority, scheme;
    std::map<std::string, StringMatch> query_params;  // Envoy only, likewise
    uint32_t port = 0;                                // the host's port it applies to; 0: every port
    // Which client proxies the match is for (Istio's sourceMatchHTTP): those whose labels
    // include `source_labels` and, when set, of namespace `source_namespace`; the others get
    // no route for it. With `gateways` given, Istio looks at the gateways alone: "mesh" is
    // every sidecar, whatever the source conditions say; a Gateway is its gateway proxies.
    LabelMap source_labels;
    std::string source_namespace;
    std::vector<std::string> gateways;  // as VirtualService::gateways; empty: the VirtualService's
    std::string stat_prefix;            // Envoy's per-route statistics prefix (gRPC keeps none)
  };
  std::vector<Match> match;  // empty: everything
  std::vector<HttpRouteDestination> route;
  // `delegate`: in place of route[], the routes of another VirtualService, one without hosts
  // (a delegate), each merged with this one's matches and settings (MergeDelegateRoute,
  // model/mesh_model.h). Only in a VirtualService with hosts; never with route[] or redirect.
  struct Delegate {
    std::string name;
    std::string namespace_name;  // the VirtualService's own when not given
  };
  std::optional<Delegate> delegate;
  // On the routes of a VirtualService served with its delegates merged in (MeshContext): where
  // the route was written, as "namespace/name" and its index in that object's http[]; for a route
  // merged from a delegate, also the delegating route, whose settings the merge may have taken,
  // and both routes as written (pointers into the context's objects, valid while it lives).
  struct Origin {
    std::string virtual_service;
    size_t index = 0;
    std::string delegating_virtual_service;  // "": not merged from a delegate
    size_t delegating_index = 0;
    const HttpRoute* written = nullptr;
    const HttpRoute* delegating = nullptr;
  };
  std::optional<Origin> origin;
  HeaderManipulation headers;
  struct Rewrite {
    std::string uri;        // the matched prefix (or the whole path) becomes this
    std::string authority;  // the Host / :authority sent upstream
    // uriRegexRewrite: every match of `regex_match` (RE2) in the path becomes `regex_rewrite`
    // (which may name its groups: \1). Not with `uri`.
    std::string regex_match, regex_rewrite;
  };
  std::optional<Rewrite> rewrite;
  struct Mirror {
    HttpRouteDestination destination;
    double percent = 100;  // Istio's default: every request; 0: no mirror (istiod sends none)
    bool single = false;   // written as `mirror` (else one of `mirrors`: field names follow the file)
    // From a Percent (mirrorPercentage, percentage): istiod sends it in millionths; a whole
    // number (mirrorPercent, the default 100) in hundredths.
    bool in_millionths = false;
  };
  // `mirror` (single, first) or `mirrors`, not both as written; a delegate's merged route may
  // have both, as istiod merges each field on its own.
  std::vector<Mirror> mirrors;
  // mirrorPercentage and the deprecated mirrorPercent as written, with or without `mirror`
  // (a delegate's route may set the percentage of its delegating route's mirror).
  std::optional<double> mirror_percentage;
  std::optional<uint32_t> mirror_percent;
  double SingleMirrorPercent() const {
    return mirror_percentage.has_value() ? *mirror_percentage
           : mirror_percent.has_value()  ? static_cast<double>(*mirror_percent)
                                         : 100.0;
  }
  std::optional<absl::Duration> timeout;
  // Istio's HTTPRetry. A route without one gets istiod's default retries on Envoy nodes
  // (generators.cc, SetRetryPolicy); attempts 0 turns retries off.
  struct Retries {
    uint32_t attempts = 0;
    std::optional<absl::Duration> per_try_timeout;
    std::string retry_on;                       // the conditions of retryOn, numbers taken out
    std::vector<uint32_t> status_codes;         // the HTTP status codes listed in retryOn
    std::optional<bool> ignore_previous_hosts;  // retryIgnorePreviousHosts; unset: true
    bool remote_localities = false;             // retryRemoteLocalities
    std::optional<absl::Duration> backoff;      // the base interval
  };
  std::optional<Retries> retries;
  std::optional<FaultInjection> fault;
  // In place of route[] (Envoy only: proxyless gRPC routes only to clusters, gRFC A28, so the
  // route is left out for gRPC nodes; analysis: cxds_grpc_ignores).
  struct Redirect {
    std::string uri;        // the new path ("" keeps it)
    std::string authority;  // the new Host ("" keeps it)
    uint32_t port = 0;      // 0 keeps it
    // derivePort: FROM_REQUEST_PORT redirects to the port the request came to (the route's
    // port); FROM_PROTOCOL_DEFAULT leaves the port out, so the scheme's default applies.
    bool port_from_request = false;
    std::string scheme;   // "" keeps it
    uint32_t code = 301;  // 301, 302, 303, 307 or 308
  };
  std::optional<Redirect> redirect;
  struct DirectResponse {
    uint32_t status = 0;  // 200-599
    std::string body;     // at most kMaxDirectResponseBody bytes
  };
  std::optional<DirectResponse> direct_response;
  // corsPolicy (Envoy's CORS filter, per route; proxyless gRPC has no CORS).
  struct CorsPolicy {
    std::vector<StringMatch> allow_origins;  // allowOrigins, and the deprecated allowOrigin as exact ones
    std::vector<std::string> allow_methods, allow_headers, expose_headers;
    std::optional<absl::Duration> max_age;  // Envoy takes whole seconds
    std::optional<bool> allow_credentials;
    // unmatchedPreflights: FORWARD (true) or IGNORE (false) a preflight from an origin not
    // allowed; unset: Envoy's default, forward.
    std::optional<bool> forward_unmatched_preflights;
  };
  std::optional<CorsPolicy> cors;
  // Envoy refuses a direct response body over this unless the route configuration raises it.
  static constexpr size_t kMaxDirectResponseBody = 4096;
};

// A tcp[] route: opaque connections to the host's TCP ports (TCP, TLS, MONGO, ...), or to a
// Gateway's TCP servers (and TLS servers that terminate), by port.
struct TcpRoute {
  struct Match {
    uint32_t port = 0;  // the host's (or the Gateway server's) port; 0: any
    // As HttpRoute::Match::gateways: empty, the VirtualService's gateways.
    std::vector<std::string> gateways;
    // Which client sidecars the match is for (Istio's sourceMatchTCP): those whose labels include
    // `source_labels` and, when set, of namespace `source_namespace` (at Gateways: ignored).
    LabelMap source_labels;
    std::string source_namespace;
  };
  std::vector<Match> match;  // empty: every connection
  std::vector<HttpRouteDestination> route;
};

// A tls[] route: TLS connections to the host's TLS and HTTPS ports, or to a Gateway's TLS
// servers that pass TLS through, by the SNI name the client sends (Envoy nodes only: proxyless
// gRPC has no opaque ports).
struct TlsRoute {
  struct Match {
    // Required; each is one of the VirtualService's hosts or under one ("a.example.com" under
    // "*.example.com"), as Istio validates. "*": every name (and none).
    std::vector<std::string> sni_hosts;
    uint32_t port = 0;                  // 0: any TLS port of the host (or of the Gateway's servers)
    std::vector<std::string> gateways;  // as TcpRoute::Match::gateways
    // As TcpRoute::Match's (Istio's matchTLS; ignored at Gateways): a sidecar meeting none skips it.
    LabelMap source_labels;
    std::string source_namespace;
  };
  std::vector<Match> match;  // at least one
  std::vector<HttpRouteDestination> route;
};

// networking.istio.io VirtualService (HTTP, TCP and TLS routes).
struct VirtualService {
  ObjectMeta meta;
  // Empty: a delegate, served only through the http[].delegate of VirtualServices with hosts,
  // and then without gateways, tcp or tls routes of its own (as Istio validates).
  std::vector<std::string> hosts;
  // What the routes apply to: "mesh" (every sidecar and proxyless client) and Gateways, as
  // "namespace/name" (a bare name in the file is of the VirtualService's namespace). Empty in
  // the file: ["mesh"].
  std::vector<std::string> gateways = {"mesh"};
  std::vector<HttpRoute> http;
  std::vector<TcpRoute> tcp;
  std::vector<TlsRoute> tls;
  std::vector<std::string> export_to;  // as a ServiceEntry's (ExportRank, model/mesh_model.h)
};

}  // namespace cxds
