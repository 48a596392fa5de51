#include "server/delta_stream.h"

#include <algorithm>
#include <vector>

#include "protocol/references.h"

namespace cxds {

using envoy::service::discovery::v3::DeltaDiscoveryRequest;

namespace {
std::vector<std::string> ToVector(const google::protobuf::RepeatedPtrField<std::string>& names) {
  return {names.begin(), names.end()};
}
}  // namespace

DeltaStream::DeltaStream(const StreamEnvironment& env, int64_t stream_id, std::string fixed_type_url,
                         DeltaTransport* transport)
    : StreamCore(env, stream_id, std::move(fixed_type_url), transport), transport_(transport) {}

std::string DeltaStream::ServiceName() const {
  return fixed_type_url_.empty() ? "DeltaADS" : StrCat("Delta", ShortTypeName(fixed_type_url_));
}

absl::Status DeltaStream::RunRequestCallback(const Request& queued) {
  const auto* request = std::get_if<DeltaDiscoveryRequest>(&queued);
  return request != nullptr ? callbacks().OnStreamDeltaRequest(stream_id_, *request) : WrongVariant();
}

absl::Status DeltaStream::CheckLimits(const Request& queued) const {
  const auto* typed = std::get_if<DeltaDiscoveryRequest>(&queued);
  if (typed == nullptr) return WrongVariant();
  const DeltaDiscoveryRequest& request = *typed;
  auto it = types_.find(request.type_url());
  if (it == types_.end()) {
    if (absl::Status status = CheckNewType(types_.size()); !status.ok()) return status;
  }
  if (absl::Status status = CheckNames(request.resource_names_subscribe(), "resource_names_subscribe"); !status.ok()) {
    return status;
  }
  if (absl::Status status = CheckNames(request.resource_names_unsubscribe(), "resource_names_unsubscribe");
      !status.ok()) {
    return status;
  }
  if (static_cast<size_t>(request.initial_resource_versions_size()) > limits().max_resource_names_per_request) {
    return absl::ResourceExhaustedError(
        StrCat("initial_resource_versions has ", request.initial_resource_versions_size(), " names; the limit is ",
               limits().max_resource_names_per_request, " (max_resource_names_per_request)"));
  }
  for (const auto& [name, version] : request.initial_resource_versions()) {
    if (name.size() > limits().max_resource_name_bytes || version.size() > limits().max_resource_name_bytes) {
      return absl::InvalidArgumentError(StrCat("an entry of initial_resource_versions is longer than ",
                                               limits().max_resource_name_bytes, " bytes (max_resource_name_bytes)"));
    }
  }
  // Delta adds names request by request: the subscription of a type is capped as a whole.
  const size_t subscribed = it != types_.end() ? it->second.subscription.names().size() : 0;
  if (subscribed + static_cast<size_t>(request.resource_names_subscribe_size()) >
      limits().max_resource_names_per_request) {
    return absl::ResourceExhaustedError(StrCat("the subscription to ", EscapeUntrusted(request.type_url()),
                                               " would have ", subscribed + request.resource_names_subscribe_size(),
                                               " names; the limit is ", limits().max_resource_names_per_request,
                                               " (max_resource_names_per_request)"));
  }
  return absl::OkStatus();
}

void DeltaStream::HandleHeartbeat() {
  for (auto& [type_url, state] : types_) {
    state.heartbeat_due = true;
    state.dirty = true;
  }
}

std::vector<ResourcePtr> DeltaStream::HeldTtlResources(const std::string& type_url, const TypeState& state,
                                                       const ConfigView& view) const {
  std::vector<ResourcePtr> held;
  const Snapshot::TypeResources* available = view.resources(type_url);
  if (available == nullptr) return held;
  state.known.ForEachName([&](std::string_view name) {
    auto found = available->items.find(std::string(name));
    if (found != available->items.end() && found->second->ttl().has_value() &&
        state.known.HoldsSameContent(*found->second)) {
      held.push_back(found->second);
    }
  });
  std::sort(held.begin(), held.end(), [](const ResourcePtr& a, const ResourcePtr& b) { return a->name() < b->name(); });
  return held;
}

void DeltaStream::UpdateInterest(const std::string& type_url, const TypeState& state) {
  SetInterest(type_url, state.subscription.wildcard(), state.subscription.shared_names());
}

void DeltaStream::HandleRequest(Request& queued) {
  // CheckLimits, which ran first, ended the stream for any other alternative.
  if (auto* request = std::get_if<DeltaDiscoveryRequest>(&queued)) Handle(*request);
}

void DeltaStream::Handle(DeltaDiscoveryRequest& request) {
  const std::string& type_url = request.type_url();
  const std::vector<std::string> subscribe = ToVector(request.resource_names_subscribe());
  const std::vector<std::string> unsubscribe = ToVector(request.resource_names_unsubscribe());

  // Subscription changes first, whatever the nonce says (docs/protocol-rules.md, R3.2).
  auto it = types_.find(type_url);
  if (it == types_.end()) {
    it = types_.emplace(type_url, TypeState(type_url)).first;
    TypeState& state = it->second;
    SotwSubscription::Change change = state.subscription.Initial(subscribe, unsubscribe);
    // What the client already holds (reconnect). The keys are not subscriptions: some arrived
    // through the wildcard (docs/protocol-rules.md, R10.4, E49).
    for (const auto& [name, version] : request.initial_resource_versions()) state.known.Reported(name, version);
    // Named subscriptions must be answered, unless the client reports holding them: those are
    // sent only if their content changed (docs/protocol-rules.md, R10.2, R10.5).
    for (const std::string& name : change.added) {
      if (!state.known.Contains(name)) state.force.insert(name);
    }
    state.pending_all = true;
    state.reply_even_if_empty = state.subscription.wildcard() && request.response_nonce().empty();
    state.dirty = true;
    UpdateInterest(type_url, state);
  } else {
    TypeState& state = it->second;
    SotwSubscription::Change change = state.subscription.Update(subscribe, unsubscribe);
    // Every name in resource_names_subscribe is answered, even one already subscribed whose
    // latest version the client should hold: it may have dropped it (docs/protocol-rules.md,
    // R10.2).
    bool resubscribed = false;
    for (const std::string& name : subscribe) {
      if (name == kWildcardName && IsWildcardCapableType(type_url)) continue;
      state.force.insert(name);
      state.reported_absent.erase(name);
      state.pending.insert(name);
      resubscribed = true;
    }
    for (const std::string& name : change.removed) {
      state.reported_absent.erase(name);
      if (state.subscription.wildcard()) {
        // "*" and the name were both subscribed: answer with the resource, or its removal if
        // the wildcard does not cover it (docs/protocol-rules.md, R10.3).
        state.force.insert(name);
        state.pending.insert(name);
      } else {
        state.known.Erase(name);  // the client drops it; nothing to send
        state.force.erase(name);
      }
    }
    if (change.wildcard_added || change.wildcard_removed) state.pending_all = true;
    if (change.any() || resubscribed) {
      state.dirty = true;
      UpdateInterest(type_url, state);
    }
  }
  if (!request.response_nonce().empty()) {
    RecordAnswer(request.type_url(), request.response_nonce(), "",
                 request.has_error_detail() ? &request.error_detail() : nullptr, /*delta=*/true);
  }
}

void DeltaStream::HandleChange(const ConfigChange& change) {
  for (auto& [type_url, state] : types_) {
    if (change.everything) {
      state.pending_all = true;
      state.dirty = true;
      continue;
    }
    auto found = change.types.find(type_url);
    if (found == change.types.end()) continue;
    if (found->second == nullptr) {
      state.pending_all = true;
    } else {
      for (const std::string& name : *found->second) state.pending.insert(name);
    }
    state.dirty = true;
  }
}

void DeltaStream::SendNext() {
  WriteNextOfRound(
      types_, round_,
      [this](const std::string& type_url, TypeState& state, const ConfigView& view) {
        std::optional<OutgoingDeltaResponse> response = Compute(type_url, state, view);
        if (response.has_value()) AfterSend(type_url, state, *response);
        return response;
      },
      [this](const OutgoingDeltaResponse& response, bool more_follows) {
        transport_->WriteResponse(response, more_follows);
      });
}

std::optional<OutgoingDeltaResponse> DeltaStream::Compute(const std::string& type_url, TypeState& state,
                                                          const ConfigView& view) {
  const Snapshot::TypeResources* available = view.resources(type_url);
  const DeltaSubscription& sub = state.subscription;

  // Only the names something asked about; everything only when the subscription or the whole
  // type changed.
  std::vector<std::string> names;
  if (state.pending_all) {
    absl::flat_hash_set<std::string> all;
    if (sub.wildcard() && available != nullptr) {
      for (const auto& [name, resource] : available->items) all.insert(name);
    }
    for (const std::string& name : sub.names()) all.insert(name);
    state.known.ForEachName([&](std::string_view name) { all.insert(std::string(name)); });
    for (const std::string& name : state.force) all.insert(name);
    names.assign(all.begin(), all.end());
  } else {
    absl::flat_hash_set<std::string> some(state.pending.begin(), state.pending.end());
    for (const std::string& name : state.force) some.insert(name);
    names.assign(some.begin(), some.end());
  }
  std::sort(names.begin(), names.end());

  OutgoingDeltaResponse response;
  for (const std::string& name : names) {
    ResourcePtr resource;
    if (available != nullptr) {
      auto found = available->items.find(name);
      if (found != available->items.end()) resource = found->second;
    }
    const bool covered = sub.Covers(name);
    const bool known = state.known.Contains(name);
    if (resource == nullptr && available != nullptr && sub.Named(name)) NoteMissing(type_url, name);
    if (resource != nullptr && covered) {
      if (state.force.contains(name) || !state.known.HoldsSameContent(*resource)) {
        response.resources.push_back(resource);
      }
    } else if (known) {
      response.removed.push_back(name);  // the client holds it; it is gone or no longer wanted
    } else if (sub.Named(name) && !state.reported_absent.contains(name)) {
      // Subscribed but does not exist: stop waiting (docs/protocol-rules.md, R7.3).
      response.removed.push_back(name);
    } else if (state.force.contains(name)) {
      // A name that does not exist: the answer R10.3 requires (docs/protocol-rules.md).
      response.removed.push_back(name);
    }
  }
  state.pending.clear();
  state.pending_all = false;
  if (state.heartbeat_due) {
    state.heartbeat_due = false;
    // Renew the TTL of what the client holds, unless this response sends it anyway
    // (docs/protocol-rules.md, R9).
    if (ClientSupportsTtl()) {
      absl::flat_hash_set<std::string> sending;
      for (const ResourcePtr& resource : response.resources) sending.insert(resource->name());
      for (ResourcePtr& resource : HeldTtlResources(type_url, state, view)) {
        if (!sending.contains(resource->name())) response.heartbeats.push_back(std::move(resource));
      }
    }
  }
  if (response.resources.empty() && response.removed.empty() && response.heartbeats.empty() &&
      !state.reply_even_if_empty) {
    return std::nullopt;
  }
  response.type_url = type_url;
  response.system_version = available != nullptr ? available->version : "";
  response.nonce = StrCat(response.system_version, "-", stream_id_, "-", ++nonce_seq_);
  response.with_ttl = ClientSupportsTtl();
  return response;
}

void DeltaStream::AfterSend(const std::string& type_url, TypeState& state, const OutgoingDeltaResponse& response) {
  for (const ResourcePtr& resource : response.resources) {
    state.known.Sent(resource);
    state.force.erase(resource->name());
  }
  for (const std::string& name : response.removed) {
    state.known.Erase(name);
    state.force.erase(name);
    if (state.subscription.Named(name)) state.reported_absent.insert(name);
  }
  state.reply_even_if_empty = false;
  state.last_nonce = response.nonce;
  if (ClientSupportsTtl()) {
    bool holds_ttl = !response.heartbeats.empty();
    for (const ResourcePtr& resource : response.resources) holds_ttl = holds_ttl || resource->ttl().has_value();
    if (holds_ttl) ArmHeartbeat();
  }

  // Envoy warms every cluster it is sent until it gets EDS for it, even if unchanged: follow
  // each CDS response with EDS for its clusters (docs/protocol-rules.md, E57).
  if (type_url == kClusterType) {
    auto eds = types_.find(kEndpointType);
    if (eds != types_.end()) {
      for (const ResourcePtr& cluster : response.resources) {
        std::string name = EdsServiceNameOf(*cluster);
        if (!name.empty() && eds->second.subscription.Covers(name)) {
          eds->second.force.insert(name);
          eds->second.pending.insert(std::move(name));
          eds->second.dirty = true;
        }
      }
    }
  }
}

}  // namespace cxds
