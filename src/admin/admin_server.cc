#include "admin/admin_server.h"

#include "admin/proxy_status.h"
#include "admin/status_page.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/ascii.h"
#include "common/clock.h"
#include "common/files.h"
#include "common/logging.h"
#include "common/strings.h"
#include "httplib.h"
#include "model/generators.h"
#include "model/proxy.h"
#include "pipeline/push_context.h"
#include "protocol/resource.h"

namespace cxds {

// httplib's request parsing, routing and response writing, fed by HttpListener one whole
// request at a time (httplib's own listening and threads are not used).
class AdminRouter : public httplib::Server {
 public:
  bool Serve(httplib::Stream& stream, bool close_connection, bool& connection_closed) {
    return process_request(stream, close_connection, connection_closed, nullptr);
  }
};

namespace {

// Length of the well-formed UTF-8 sequence at the start of `text` (1 to 4), or 0 if there is
// none (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, cut short).
size_t Utf8SequenceLength(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // beyond U+10FFFF
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
  }
  return length;
}

std::string Quote(std::string_view text) { return AdminJsonQuote(text); }

// 127.0.0.0/8, ::1 (bare or bracketed) and localhost.
bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr address{};
  return inet_pton(AF_INET, host.c_str(), &address) == 1 && (ntohl(address.s_addr) >> 24) == 127;
}

// "Bearer TOKEN" against the configured token, in time independent of where they differ.
bool TokenMatches(const std::string& header, const std::string& token) {
  constexpr std::string_view kScheme = "Bearer ";
  if (header.size() != kScheme.size() + token.size() || header.compare(0, kScheme.size(), kScheme) != 0) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < token.size(); ++i) {
    diff |= static_cast<unsigned char>(header[kScheme.size() + i] ^ token[i]);
  }
  return diff == 0;
}

std::string Time(absl::Time t) {
  if (t == absl::InfiniteFuture() || t == absl::InfinitePast()) return "null";
  return Quote(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone()));
}
std::string Time(const std::optional<absl::Time>& t) { return t.has_value() ? Time(*t) : "null"; }
std::string Ms(absl::Duration d) { return StrCat(absl::ToDoubleMilliseconds(d)); }

std::string SynczJson(const AckLedger& ledger) {
  std::string out = "[";
  bool first_stream = true;
  for (const StreamSyncStatus& stream : ledger.AllStreams()) {
    out += first_stream ? "" : ",";
    first_stream = false;
    out += StrCat("{\"stream\":", stream.stream_id, ",\"node\":", Quote(stream.node_id),
                  ",\"identity\":", Quote(stream.identity), ",\"opened\":", Time(stream.opened), ",\"types\":[");
    bool first_type = true;
    for (const TypeSyncStatus& t : stream.types) {
      out += first_type ? "" : ",";
      first_type = false;
      out += StrCat("{\"type\":", Quote(t.type_url), ",\"status\":",
                    Quote(t.last_nack.has_value() && t.last_nack->nonce == t.sent_nonce ? "NACKED"
                          : t.synced()                                                  ? "SYNCED"
                          : t.responses_sent == 0                                       ? "NOT_SENT"
                                                                                        : "STALE"),
                    ",\"sent_version\":", Quote(t.sent_version), ",\"sent_nonce\":", Quote(t.sent_nonce),
                    ",\"sent_time\":", Time(t.sent_time), ",\"acked_version\":", Quote(t.acked_version),
                    ",\"acked_time\":", Time(t.acked_time), ",\"acks\":", t.acks, ",\"nacks\":", t.nacks,
                    ",\"last_nack\":");
      if (t.last_nack.has_value()) {
        out += StrCat("{\"version\":", Quote(t.last_nack->sent_version), ",\"nonce\":", Quote(t.last_nack->nonce),
                      ",\"error\":", Quote(t.last_nack->error), ",\"time\":", Time(t.last_nack->time), "}");
      } else {
        out += "null";
      }
      out += "}";
    }
    out += "]}";
  }
  return out + "]";
}

std::string PushStatusJson(const PushPipeline& pipeline) {
  std::string out = "[";
  bool first = true;
  for (const PushPipeline::PushRecord& r : pipeline.RecentPushes()) {
    out += first ? "" : ",";
    first = false;
    std::string configs = "[";
    for (size_t i = 0; i < r.configs.size(); ++i) configs += (i ? "," : "") + Quote(r.configs[i]);
    configs += "]";
    std::string ids = "[";
    for (size_t i = 0; i < r.change_ids.size(); ++i) ids += StrCat(i ? "," : "", r.change_ids[i]);
    ids += "]";
    out += StrCat("{\"push\":", r.sequence, ",\"version\":", Quote(r.version), ",\"full\":", r.full,
                  ",\"reasons\":", Quote(r.reasons), ",\"configs\":", configs, ",\"configs_total\":", r.configs_total,
                  ",\"changes\":", ids, ",\"changes_total\":", r.change_ids_total,
                  ",\"proxies_pushed\":", r.proxies_notified, ",\"proxies\":", r.proxies_total,
                  ",\"first_change\":", Time(r.first_change), ",\"started\":", Time(r.started),
                  ",\"context_ms\":", Ms(r.context_time), ",\"push_ms\":", Ms(r.push_time), "}");
  }
  return out + "]";
}

std::string ConfigStatusJson(const ConfigStore& store) {
  std::string out = "[";
  bool first = true;
  for (const ConfigStore::FileStatus& f : store.Status()) {
    out += first ? "" : ",";
    first = false;
    std::string accepted = "[";
    for (size_t i = 0; i < f.accepted.size(); ++i) accepted += (i ? "," : "") + Quote(f.accepted[i].ToString());
    std::string errors = "[";
    for (size_t i = 0; i < f.errors.size(); ++i) errors += (i ? "," : "") + Quote(f.errors[i].ToString());
    std::string skipped = "[";
    for (size_t i = 0; i < f.skipped.size(); ++i) skipped += (i ? "," : "") + Quote(f.skipped[i].ToString());
    std::string warnings = "[";
    for (size_t i = 0; i < f.warnings.size(); ++i) warnings += (i ? "," : "") + Quote(f.warnings[i].ToString());
    out += StrCat("{\"file\":", Quote(f.path), ",\"accepted\":", accepted, "],\"errors\":", errors,
                  "],\"skipped\":", skipped, "],\"warnings\":", warnings, "]}");
  }
  return out + "]";
}

// /debug/config_status?proxy=ID: what the proxy is not given of the config that applies to it,
// and why: what proxyless gRPC does not implement (model/generators.h, GrpcConfigNotes), and
// for an Envoy gateway the servers and secrets it is not given (GatewayConfigNotes); a sidecar
// is given all of what cxds serves.
std::string ProxyConfigStatusJson(const std::string& node_id, const Proxy& proxy_node, const Snapshot* view,
                                  const PushContext* context, const std::vector<std::string>& secret_readers,
                                  const WorkloadRegistry* workloads) {
  const ProxyInfo proxy = ParseProxyInfo(proxy_node.node, workloads);
  constexpr size_t kMaxNotes = 1000;
  std::vector<ProxyConfigNote> notes;
  const auto* mesh = dynamic_cast<const MeshContext*>(context);
  if (proxy.grpc && mesh != nullptr && view != nullptr) {
    notes = GrpcConfigNotes(*mesh, *view, proxy.namespace_name, kMaxNotes + 1, &proxy.labels);
  } else if (proxy.type == "router" && mesh != nullptr) {
    notes = GatewayConfigNotes(*mesh, proxy, proxy_node.identity, secret_readers, kMaxNotes + 1);
  }
  const bool truncated = notes.size() > kMaxNotes;
  if (truncated) notes.resize(kMaxNotes);
  std::string out =
      StrCat("{\"proxy\":", Quote(node_id), ",\"generator\":", Quote(proxy.grpc ? "grpc" : "envoy"),
             ",\"workload\":", proxy.workload.empty() ? "null" : Quote(proxy.workload), ",\"not_served\":[");
  for (size_t i = 0; i < notes.size(); ++i) {
    out += StrCat(i ? "," : "", "{\"resource\":", Quote(notes[i].resource), ",\"object\":", Quote(notes[i].object),
                  ",\"field\":", Quote(notes[i].field), ",\"reason\":", Quote(notes[i].reason), "}");
  }
  return StrCat(out, "],\"truncated\":", truncated ? "true" : "false", "}");
}

std::string ChangeJson(const ChangeStages& c) {
  std::string configs = "[";
  for (size_t i = 0; i < c.configs.size(); ++i) configs += (i ? "," : "") + Quote(c.configs[i]);
  std::string out =
      StrCat("{\"id\":", c.id, ",\"received\":", Time(c.received), ",\"configs\":", configs,
             "],\"reasons\":", Quote(c.reasons),
             ",\"push\":", c.push_number.has_value() ? std::to_string(*c.push_number) : "null",
             ",\"debounced\":", Time(c.debounced), ",\"push_started\":", Time(c.push_started),
             ",\"version\":", Quote(c.push_version), ",\"full\":", c.full, ",\"configs_total\":", c.configs_total,
             ",\"detail_truncated\":", c.detail_truncated, ",\"proxies_dropped\":", c.dropped.proxies,
             ",\"untracked_events\":", c.untracked_events, ",\"proxies\":[");
  bool first = true;
  for (const auto& [stream, p] : c.proxies) {
    out += first ? "" : ",";
    first = false;
    out += StrCat("{\"stream\":", stream, ",\"node\":", Quote(p.node_id), ",\"queued\":", Time(p.queued),
                  ",\"dequeued\":", Time(p.dequeued), ",\"done\":", Time(p.done), ",\"responses\":", p.responses,
                  ",\"state\":",
                  Quote(p.types.empty() ? "NOTHING_TO_SEND"
                        : p.rejected()  ? "NACKED"
                        : p.answered()  ? "ACKED"
                                        : "SENT"),
                  ",\"types\":[");
    for (size_t i = 0; i < p.types.size(); ++i) {
      const TypeStage& t = p.types[i];
      out += StrCat(i ? "," : "", "{\"type\":", Quote(t.type_url), ",\"version\":", Quote(t.version),
                    ",\"nonce\":", Quote(t.nonce), ",\"sent\":", Time(t.sent), ",\"answered\":", Time(t.answered),
                    ",\"accepted\":", t.answered.has_value() && t.accepted, ",\"error\":", Quote(t.error), "}");
    }
    out += "]}";
  }
  return out + "]}";
}

std::string ConfigDumpJson(const Snapshot& snapshot) {
  std::string out = "{";
  bool first_type = true;
  for (const auto& [type_url, resources] : snapshot.types()) {
    out +=
        StrCat(first_type ? "" : ",", Quote(type_url), ":{\"version\":", Quote(resources->version), ",\"resources\":[");
    first_type = false;
    bool first = true;
    for (const auto& [name, resource] : resources->items) {
      out += StrCat(first ? "" : ",", JsonForDisplay(*resource).value_or("null"));
      first = false;
    }
    out += "]}";
  }
  return out + "}";
}

// Read when scraped. RSS alone cannot tell a leak from memory the allocator keeps after a
// burst (glibc does not return freed heap to the system): heap in use can.
void SetProcessMemoryGauges(MetricsRegistry& metrics) {
  long resident_pages = 0;
  long ignored = 0;
  if (std::ifstream statm("/proc/self/statm"); statm >> ignored >> resident_pages) {
    metrics.GetGauge("process_resident_memory_bytes", "Resident set size of this process (bytes).")
        .Set(static_cast<double>(resident_pages) * static_cast<double>(sysconf(_SC_PAGESIZE)));
  }
  const struct mallinfo2 info = mallinfo2();
  metrics.GetGauge("cxds_heap_in_use_bytes", "Heap bytes allocated and not freed (glibc mallinfo2: uordblks + hblkhd).")
      .Set(static_cast<double>(info.uordblks + info.hblkhd));
  metrics.GetGauge("cxds_heap_free_bytes", "Heap bytes freed but kept by the allocator (glibc mallinfo2: fordblks).")
      .Set(static_cast<double>(info.fordblks));
}

void SetHeapReleaseGauges(const HeapReleaser::Stats& stats, MetricsRegistry& metrics) {
  metrics.GetGauge("cxds_heap_trims", "Times freed heap kept by the allocator was given back to the system.")
      .Set(static_cast<double>(stats.trims));
  metrics
      .GetGauge("cxds_heap_released_bytes",
                "Resident memory given back to the system by those trims (bytes, summed; --heap-release-interval).")
      .Set(static_cast<double>(stats.released_bytes));
}

}  // namespace

std::string AdminJsonQuote(std::string_view text) {
  // JsonQuote escapes quotes, backslashes and control characters; the text is split at bytes
  // that are not well-formed UTF-8, each of which becomes \ufffd.
  std::string out = "\"";
  size_t run = 0;  // start of the current well-formed run
  size_t i = 0;
  const auto flush = [&](size_t end) {
    const std::string quoted = JsonQuote(text.substr(run, end - run));
    out.append(quoted, 1, quoted.size() - 2);  // without its quotes
  };
  while (i < text.size()) {
    const size_t length = Utf8SequenceLength(text.substr(i));
    if (length != 0) {
      i += length;
      continue;
    }
    flush(i);
    out += "\\ufffd";
    run = ++i;
  }
  flush(i);
  return out + "\"";
}

std::string ChangeSummaryJson(const ChangeSummary& s) {
  const auto unix_ms = [](const std::optional<absl::Time>& t) {
    return t.has_value() ? StrCat(absl::ToDoubleMilliseconds(*t - absl::UnixEpoch())) : std::string("null");
  };
  const auto between = [](const std::optional<absl::Time>& from, const std::optional<absl::Time>& to) {
    return from.has_value() && to.has_value() ? StrCat(absl::ToDoubleMilliseconds(*to - *from)) : std::string("null");
  };
  return StrCat(
      "{\"change\":", s.id, ",\"version\":", Quote(s.version), ",\"proxies\":", s.proxies,
      ",\"responses\":", s.responses, ",\"proxies_written\":", s.proxies_written,
      ",\"proxies_acked\":", s.proxies_acked, ",\"proxies_nacked\":", s.proxies_nacked,
      ",\"received_unix_ms\":", unix_ms(s.received), ",\"first_sent_unix_ms\":", unix_ms(s.first_sent),
      ",\"last_written_unix_ms\":", unix_ms(s.last_written), ",\"last_answered_unix_ms\":", unix_ms(s.last_answered),
      ",\"send_ms\":", between(s.first_sent, s.last_written), ",\"push_ms\":", between(s.received, s.last_written),
      ",\"detail_truncated\":", s.detail_truncated, ",\"untracked_events\":", s.untracked_events, "}");
}

AdminServer::AdminServer(AdminSources sources, AdminLimits limits)
    : sources_(sources),
      router_(std::make_unique<AdminRouter>()),
      listener_(limits,
                [router = router_.get()](httplib::Stream& stream, bool close_connection, bool& connection_closed) {
                  return router->Serve(stream, close_connection, connection_closed);
                }) {
  router_->set_payload_max_length(limits.max_request_bytes);
  Routes();
}

AdminServer::~AdminServer() { Stop(); }

void AdminServer::Routes() {
  const auto json = [](httplib::Response& res, const std::string& body) {
    res.set_content(body + "\n", "application/json");
  };
  router_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    const std::string_view page = StatusPageHtml();
    res.set_content(page.data(), page.size(), "text/html; charset=utf-8");
    // The page runs only its own inline script and reads only this server.
    res.set_header("Content-Security-Policy",
                   "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'");
    res.set_header("X-Content-Type-Options", "nosniff");
  });
  router_->Get("/healthz",
               [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  router_->Get("/ready", [this](const httplib::Request&, httplib::Response& res) {
    const bool ready = !sources_.ready || sources_.ready();
    res.status = ready ? 200 : 503;
    res.set_content(ready ? "ready\n" : "not ready: the config directory is still loading\n", "text/plain");
  });
  router_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    // Process-wide, read when scraped: every Resource::Create serializes once.
    sources_.metrics
        ->GetGauge("cxds_resource_serializations",
                   "Resources serialized by this process so far (each once per version, then shared).")
        .Set(static_cast<double>(ResourceSerializationCount()));
    SetProcessMemoryGauges(*sources_.metrics);
    if (sources_.heap_releaser != nullptr) SetHeapReleaseGauges(sources_.heap_releaser->stats(), *sources_.metrics);
    sources_.metrics
        ->GetGauge("cxds_push_contexts_alive", "PushContexts alive: the current one and older ones still held.")
        .Set(static_cast<double>(PushContext::Alive()));
    if (sources_.tracker != nullptr) {
      const ConvergenceTracker::Stats stats = sources_.tracker->stats();
      sources_.metrics
          ->GetGauge("cxds_convergence_detail_bytes", "Estimated bytes of the convergence tracker's per-proxy records.")
          .Set(static_cast<double>(stats.detail_bytes));
      sources_.metrics->GetGauge("cxds_convergence_proxy_records", "Per-proxy records the convergence tracker keeps.")
          .Set(static_cast<double>(stats.proxy_records));
    }
    if (sources_.source != nullptr) {
      const SourceStatus source = sources_.source->status();
      sources_.metrics
          ->GetGauge("cxds_config_revision", "Store revision of the config applied (etcd; 0 for a directory).")
          .Set(static_cast<double>(source.revision));
      sources_.metrics
          ->GetGauge("cxds_config_source_connected",
                     "1 if the config source is reachable; 0: the last good config keeps serving.")
          .Set(source.connected ? 1 : 0);
    }
    if (sources_.on_scrape) sources_.on_scrape(*sources_.metrics);
    res.set_content(sources_.metrics->RenderPrometheus(), "text/plain; version=0.0.4");
  });
  // Which config revision the pages below describe: headers, so the bodies keep their shape.
  const auto source_headers = [this](httplib::Response& res) {
    if (sources_.source == nullptr) return;
    const SourceStatus source = sources_.source->status();
    res.set_header("X-Cxds-Config-Revision", std::to_string(source.revision));
    res.set_header("X-Cxds-Config-Source-Connected", source.connected ? "true" : "false");
  };
  router_->Get("/debug/syncz", [this, json, source_headers](const httplib::Request&, httplib::Response& res) {
    source_headers(res);
    json(res, SynczJson(*sources_.ledger));
  });
  router_->Get("/debug/proxy_status", [this, json](const httplib::Request&, httplib::Response& res) {
    std::string push_version;
    if (sources_.pipeline != nullptr) {
      const std::vector<PushPipeline::PushRecord> pushes = sources_.pipeline->RecentPushes();
      if (!pushes.empty()) push_version = pushes.back().version;
    }
    json(res, ProxyStatusJson(ProxyStatusRows(sources_.ledger->AllStreams(), RealClock().Now()), push_version));
  });
  router_->Get("/debug/proxy_config", [this, json](const httplib::Request& req, httplib::Response& res) {
    const std::string proxy = req.get_param_value("proxy");
    std::optional<std::string> config =
        proxy.empty() ? std::nullopt
                      : ProxyConfigJson(*sources_.ledger, proxy, RealClock().Now(), req.get_param_value("type"));
    if (!config.has_value()) {
      res.status = proxy.empty() ? 400 : 404;
      json(res, StrCat("{\"error\":",
                       Quote(proxy.empty() ? "give ?proxy=NODE_ID"
                                           : StrCat("no connected proxy ", TruncateUntrusted(proxy, kMaxEchoBytes))),
                       "}"));
      return;
    }
    json(res, *config);
  });
  router_->Get("/debug/proxy_diff", [this, json](const httplib::Request& req, httplib::Response& res) {
    const std::string proxy = req.get_param_value("proxy");
    std::string error;
    if (proxy.empty()) {
      res.status = 400;
      error = "give ?proxy=NODE_ID";
    } else if (sources_.pipeline == nullptr) {
      res.status = 404;
      error = "this server generates nothing (a snapshot cache serves it): nothing to compare with";
    } else if (std::optional<std::string> diff =
                   ProxyDiffJson(*sources_.ledger, *sources_.pipeline, proxy, RealClock().Now())) {
      json(res, *diff);
      return;
    } else {
      res.status = 404;
      error = StrCat("no connected proxy ", TruncateUntrusted(proxy, kMaxEchoBytes));
    }
    json(res, StrCat("{\"error\":", Quote(error), "}"));
  });
  router_->Get("/debug/config_source", [this, json](const httplib::Request&, httplib::Response& res) {
    if (sources_.source == nullptr) {
      json(res, "{\"source\":null}");
      return;
    }
    const SourceStatus source = sources_.source->status();
    json(res, StrCat("{\"source\":", Quote(sources_.source->Describe()), ",\"connected\":", source.connected,
                     ",\"revision\":", source.revision, ",\"detail\":", Quote(source.detail), "}"));
  });
  router_->Get("/debug/push_status", [this, json](const httplib::Request&, httplib::Response& res) {
    json(res, PushStatusJson(*sources_.pipeline));
  });
  router_->Get("/debug/config_status", [this, json, source_headers](const httplib::Request& req,
                                                                    httplib::Response& res) {
    source_headers(res);
    const std::string proxy = req.get_param_value("proxy");
    if (proxy.empty()) {
      json(res, sources_.store != nullptr ? ConfigStatusJson(*sources_.store) : "[]");
      return;
    }
    const std::optional<Proxy> node = sources_.pipeline->FindProxy(proxy);
    if (!node.has_value()) {
      res.status = 404;
      json(res,
           StrCat("{\"error\":", Quote(StrCat("no connected proxy ", TruncateUntrusted(proxy, kMaxEchoBytes))), "}"));
      return;
    }
    const SnapshotPtr view = sources_.pipeline->ProxyView(proxy);
    const std::shared_ptr<const PushContext> context = sources_.pipeline->context();
    const std::shared_ptr<const WorkloadRegistry> workloads =
        sources_.model != nullptr ? sources_.model->workloads() : nullptr;
    json(res, ProxyConfigStatusJson(proxy, *node, view.get(), context.get(), sources_.secret_readers, workloads.get()));
  });
  router_->Get("/debug/config_dump", [this, json](const httplib::Request& req, httplib::Response& res) {
    const std::string proxy = req.get_param_value("proxy");
    if (proxy.empty()) {
      res.status = 400;
      json(res, "{\"error\":\"give ?proxy=NODE_ID\"}");
      return;
    }
    SnapshotPtr view = sources_.pipeline->ProxyView(proxy);
    if (view == nullptr) {
      res.status = 404;
      const std::string echo = TruncateUntrusted(proxy, kMaxEchoBytes);  // not a 1 MB id whole
      json(res, StrCat("{\"error\":", Quote(StrCat("no connected proxy ", echo)), "}"));
      return;
    }
    // Who the proxy's streams authenticated as (server/authenticator.h): "none" in plaintext.
    std::string identities = "[";
    for (const StreamSyncStatus& stream : sources_.ledger->AllStreams()) {
      if (stream.node_id != proxy) continue;
      identities += StrCat(identities.size() > 1 ? "," : "", Quote(stream.identity));
    }
    std::string dump = ConfigDumpJson(*view);
    dump.insert(1, StrCat("\"@identities\":", identities, "]", dump.size() > 2 ? "," : ""));
    json(res, dump);
  });
  router_->Get("/debug/changes", [this, json](const httplib::Request&, httplib::Response& res) {
    std::string out = "[";
    bool first = true;
    for (uint64_t id : sources_.tracker->RecentIds()) {
      out += StrCat(first ? "" : ",", id);
      first = false;
    }
    json(res, out + "]");
  });
  router_->Get("/debug/change_summaries", [this, json](const httplib::Request&, httplib::Response& res) {
    std::string out = "[";
    bool first = true;
    for (uint64_t id : sources_.tracker->RecentIds()) {
      std::optional<ChangeSummary> summary = sources_.tracker->Summarize(id);
      if (!summary.has_value()) continue;  // forgotten meanwhile
      out += StrCat(first ? "" : ",", ChangeSummaryJson(*summary));
      first = false;
    }
    json(res, out + "]");
  });
  // /debug/changes/ID is matched here with string operations: httplib matches routes with
  // std::regex, whose matcher recurses once per character, so a pattern like (\d+) against a
  // client's 8 KiB path risks the handler thread's stack.
  // Every request passes here first (httplib has one pre-routing handler): the bearer token,
  // then /debug/changes/ID.
  router_->set_pre_routing_handler([this, json](const httplib::Request& req, httplib::Response& res) {
    // "/" is the status page: static, no data in it; its script sends the token for the rest.
    const bool open_path = req.path == "/healthz" || req.path == "/ready" || req.path == "/";
    if (!sources_.bearer_token.empty() && !open_path &&
        !TokenMatches(req.get_header_value("Authorization"), sources_.bearer_token)) {
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer realm=\"cxds-admin\"");
      json(res, "{\"error\":\"this admin server requires Authorization: Bearer TOKEN (--admin-token-file)\"}");
      return httplib::Server::HandlerResponse::Handled;
    }
    constexpr std::string_view kPrefix = "/debug/changes/";
    if (req.method != "GET" || req.path.rfind(kPrefix, 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    const std::string id_text = req.path.substr(kPrefix.size());
    uint64_t id = 0;
    std::optional<ChangeStages> change;
    if (absl::SimpleAtoi(id_text, &id)) change = sources_.tracker->Get(id);
    if (!change.has_value()) {
      res.status = 404;
      json(res, StrCat("{\"error\":",
                       Quote(StrCat("change ", TruncateUntrusted(id_text, kMaxEchoBytes), " is unknown or forgotten")),
                       "}"));
    } else {
      json(res, ChangeJson(*change));
    }
    return httplib::Server::HandlerResponse::Handled;
  });
}

absl::StatusOr<std::string> ReadBearerToken(const std::string& path) {
  if (path.empty()) return std::string();
  absl::StatusOr<std::string> token = ReadSmallFile(path, 4096, "admin token file");
  if (!token.ok()) return token.status();
  std::string trimmed(absl::StripAsciiWhitespace(*token));
  if (trimmed.empty()) return absl::InvalidArgumentError(StrCat(path, ": the admin token file is empty"));
  return trimmed;
}

absl::Status AdminServer::Start(const std::string& host, int port) {
  if (!IsLoopbackHost(host) && sources_.bearer_token.empty()) {
    return absl::InvalidArgumentError(
        StrCat("admin: \"", host, "\" is not a loopback address; give a bearer token (--admin-token-file) to serve ",
               "the admin pages there (they show configuration and are never served unauthenticated off loopback)"));
  }
  return listener_.Start(host, port);
}

absl::Status AdminServer::Start(const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(StrCat("admin: bad address \"", address, "\" (want HOST:PORT)"));
  }
  return Start(address.substr(0, colon), port);
}

void AdminServer::Stop() { listener_.Stop(); }

}  // namespace cxds
