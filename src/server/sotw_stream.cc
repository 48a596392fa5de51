#include "server/sotw_stream.h"

#include <algorithm>
#include <vector>

#include "common/logging.h"
#include "common/strings.h"
#include "protocol/references.h"
#include "protocol/type_url.h"

namespace cxds {

using envoy::service::discovery::v3::DiscoveryRequest;

namespace {
std::vector<std::string> RequestedNames(const DiscoveryRequest& request) {
  return {request.resource_names().begin(), request.resource_names().end()};
}
}  // namespace

SotwStream::SotwStream(const StreamEnvironment& env, int64_t stream_id, std::string fixed_type_url,
                       StreamTransport* transport)
    : StreamCore(env, stream_id, std::move(fixed_type_url), transport), transport_(transport) {}

std::string SotwStream::ServiceName() const {
  return fixed_type_url_.empty() ? "ADS" : std::string(ShortTypeName(fixed_type_url_));
}

absl::Status SotwStream::RunRequestCallback(const Request& queued) {
  const auto* request = std::get_if<DiscoveryRequest>(&queued);
  return request != nullptr ? callbacks().OnStreamRequest(stream_id_, *request) : WrongVariant();
}

absl::Status SotwStream::CheckLimits(const Request& queued) const {
  const auto* typed = std::get_if<DiscoveryRequest>(&queued);
  if (typed == nullptr) return WrongVariant();
  const DiscoveryRequest& request = *typed;
  if (!types_.contains(request.type_url())) {
    if (absl::Status status = CheckNewType(types_.size()); !status.ok()) return status;
  }
  // A SotW request names the whole subscription: this also bounds what the type holds.
  return CheckNames(request.resource_names(), "resource_names");
}

void SotwStream::HandleHeartbeat() {
  for (auto& [type_url, state] : types_) {
    state.heartbeat_due = true;
    state.dirty = true;
  }
}

void SotwStream::HandleChange(const ConfigChange& change) {
  // SotW compares whole types against what was sent (version and content), so any change to
  // a type makes it worth a look; a type the change does not name did not change.
  for (auto& [type_url, state] : types_) {
    if (change.everything || change.types.contains(type_url)) state.dirty = true;
  }
}

void SotwStream::HandleRequest(Request& queued) {
  // CheckLimits, which ran first, ended the stream for any other alternative.
  if (auto* request = std::get_if<DiscoveryRequest>(&queued)) Handle(*request);
}

void SotwStream::Handle(DiscoveryRequest& request) {
  const std::string& type_url = request.type_url();
  auto it = types_.find(type_url);

  // The request classes C1-C5 of docs/protocol-rules.md, in order.
  // C1: NACK. Recorded; the rejected content is never sent again because of it. A NACK that
  // answers the newest response may still change the subscription.
  if (request.has_error_detail()) {
    HandleFeedback(request);
    if (it != types_.end() && request.response_nonce() == it->second.last_nonce) {
      ApplyNames(type_url, it->second, request);
    }
    return;
  }

  // C2: the first request for this type on this stream is initial, whatever its nonce (a nonce
  // from an earlier stream means nothing here).
  if (it == types_.end()) {
    if (!request.response_nonce().empty()) HandleFeedback(request);
    if (!IsWildcardCapableType(type_url) && request.resource_names().empty()) {
      return;  // subscribed to nothing: no state, no response (docs/protocol-rules.md, E28)
    }
    it = types_.emplace(type_url, TypeState(type_url)).first;
    TypeState& state = it->second;
    state.subscription.Apply(RequestedNames(request));
    SetInterest(type_url, state.subscription.wildcard(), state.subscription.shared_names());
    state.dirty = true;
    // Envoy may ask for EDS before CDS after reconnecting; its next EDS request then looks
    // like an ACK but must still be answered or the new clusters stay warming
    // (docs/protocol-rules.md, E18).
    if (type_url == kClusterType) {
      auto eds = types_.find(kEndpointType);
      if (eds != types_.end()) eds->second.always_respond = true;
    }
    return;
  }

  TypeState& state = it->second;
  // An empty nonce on an existing subscription: the client has not seen a response yet, or
  // starts over; either way it gets the full current state for its new name list.
  if (request.response_nonce().empty()) {
    if (!ApplyNames(type_url, state, request)) return;  // unsubscribed from everything
    state.respond_in_full = true;
    state.dirty = true;
    return;
  }

  HandleFeedback(request);
  // C3: stale nonce. Not answered; the client will ACK the newer response. A nonce is stale
  // only once a newer response was sent for this subscription: after an unsubscribe from
  // everything the subscription starts afresh, and the client's last nonce is still current.
  if (!state.last_nonce.empty() && request.response_nonce() != state.last_nonce) {
    Log().debug("STALE stream={} node={} type={} nonce={} current_nonce={}", stream_id_, node_log_, Untrusted(type_url),
                Untrusted(request.response_nonce()), state.last_nonce);
    RecordExpiredNonce(type_url);
    return;
  }
  // C4/C5: ACK, possibly with a subscription change.
  ApplyNames(type_url, state, request);
}

bool SotwStream::ApplyNames(const std::string& type_url, TypeState& state, const DiscoveryRequest& request) {
  if (!IsWildcardCapableType(type_url) && request.resource_names().empty()) {
    // Unsubscribe from everything of this type: forget it (a later request starts afresh).
    // `state` is destroyed here.
    SetInterest(type_url, false, NoSubscribedNames());
    types_.erase(type_url);
    env_.ledger->ForgetType(*ledger_stream_, type_url);
    return false;
  }
  const bool was_wildcard = state.subscription.wildcard();
  SotwSubscription::Change change = state.subscription.Apply(RequestedNames(request));
  if (change.any()) SetInterest(type_url, state.subscription.wildcard(), state.subscription.shared_names());
  for (const std::string& name : change.removed) {
    if (!state.subscription.Covers(name)) state.known.erase(name);
  }
  if (change.wildcard_removed) {
    for (auto known = state.known.begin(); known != state.known.end();) {
      auto current = known++;
      if (!state.subscription.Covers(current->first)) state.known.erase(current);
    }
  }
  // Newly named resources are sent even if sent before (the client may have dropped them as
  // unrequested), unless a wildcard already covered them: then the client holds them
  // (docs/protocol-rules.md, R4.1).
  bool newly_wanted = change.wildcard_added;
  if (!was_wildcard) {
    for (const std::string& name : change.added) state.force.insert(name);
    newly_wanted = newly_wanted || !change.added.empty();
  }
  if (newly_wanted || state.always_respond) state.dirty = true;
  return true;
}

void SotwStream::HandleFeedback(const DiscoveryRequest& request) {
  RecordAnswer(request.type_url(), request.response_nonce(), request.version_info(),
               request.has_error_detail() ? &request.error_detail() : nullptr, /*delta=*/false);
}

void SotwStream::SendNext() {
  WriteNextOfRound(
      types_, round_,
      [this](const std::string& type_url, TypeState& state, const ConfigView& view) {
        std::optional<OutgoingResponse> response = Compute(type_url, state, view);
        if (response.has_value()) AfterSend(type_url, state, *response);
        return response;
      },
      [this](const OutgoingResponse& response, bool more_follows) {
        transport_->WriteResponse(response, more_follows);
      });
}

std::optional<OutgoingResponse> SotwStream::Compute(const std::string& type_url, TypeState& state,
                                                    const ConfigView& view) {
  const Snapshot::TypeResources* available = view.resources(type_url);
  if (available == nullptr) {
    // A type this configuration does not have: nothing to say (docs/protocol-rules.md, E19).
    return std::nullopt;
  }
  const std::string& version = available->version;
  const SotwSubscription& sub = state.subscription;

  std::vector<ResourcePtr> covered;
  if (sub.wildcard()) {
    for (const auto& [name, resource] : available->items) covered.push_back(resource);
  } else {
    // Look names up rather than scan: a client usually wants few of many (EDS).
    for (const std::string& name : sub.names()) {
      auto found = available->items.find(name);
      if (found != available->items.end()) {
        covered.push_back(found->second);
      } else {
        NoteMissing(type_url, name);
      }
    }
    std::sort(covered.begin(), covered.end(),
              [](const ResourcePtr& a, const ResourcePtr& b) { return a->name() < b->name(); });
  }
  const bool version_changed = !state.sent_any || version != state.sent_version;
  auto client_lacks = [&](const ResourcePtr& resource) {
    auto known = state.known.find(resource->name());
    return known == state.known.end() || known->second != resource->content_version() ||
           state.force.contains(resource->name());
  };

  std::vector<ResourcePtr> to_send;
  bool partial = false;  // to_send is not all of covered
  if (IsFullStateType(type_url)) {
    // Full state: the response always lists everything subscribed; decide only whether one is
    // needed. A resource that disappeared needs one too (it is deleted by omission).
    bool needed = state.respond_in_full || state.always_respond || version_changed;
    size_t still_known = 0;
    for (const ResourcePtr& resource : covered) {
      if (client_lacks(resource)) needed = true;
      if (state.known.contains(resource->name())) still_known++;
    }
    if (still_known != state.known.size()) needed = true;
    // A heartbeat cannot be partial for these types (a missing resource is deleted): renew the
    // TTLs by sending the full state again.
    const bool heartbeat =
        state.heartbeat_due && ClientSupportsSotwTtl() &&
        std::any_of(covered.begin(), covered.end(), [](const ResourcePtr& r) { return r->ttl().has_value(); });
    state.heartbeat_due = false;
    if (!needed && !heartbeat) return std::nullopt;
    to_send = std::move(covered);
  } else {
    // A snapshot's version covers every resource: a new one resends all subscribed. A linear
    // cache versions resources one by one: send only what the client lacks.
    if (state.respond_in_full || state.always_respond || (version_changed && available->version_covers_all)) {
      to_send = std::move(covered);
    } else {
      for (ResourcePtr& resource : covered) {
        if (client_lacks(resource)) to_send.push_back(std::move(resource));
      }
      partial = to_send.size() < covered.size();
    }
    if (to_send.empty() && state.heartbeat_due) {
      state.heartbeat_due = false;
      // Nothing changed: a heartbeat (no bodies) for the TTL'd resources the client holds, at
      // the version it holds (docs/protocol-rules.md, R9).
      if (ClientSupportsSotwTtl() && state.sent_any) {
        OutgoingResponse heartbeat;
        for (const ResourcePtr& resource : covered) {
          auto known = state.known.find(resource->name());
          if (resource->ttl().has_value() && known != state.known.end() &&
              known->second == resource->content_version()) {
            heartbeat.resources.push_back(resource);
          }
        }
        if (heartbeat.resources.empty()) return std::nullopt;
        heartbeat.type_url = type_url;
        heartbeat.version = state.sent_version;
        heartbeat.nonce = StrCat(state.sent_version, "-", stream_id_, "-", ++nonce_seq_);
        heartbeat.heartbeat = true;
        return heartbeat;
      }
    } else if (state.heartbeat_due) {
      state.dirty = true;  // after this response, renew what it did not carry
    }
    // SotW cannot say "does not exist" for these types: nothing to send means no response.
    if (to_send.empty()) return std::nullopt;
  }
  OutgoingResponse response;
  response.type_url = type_url;
  response.wrap_ttl = ClientSupportsSotwTtl();
  response.version = version;
  response.nonce = StrCat(version, "-", stream_id_, "-", ++nonce_seq_);
  response.resources = std::move(to_send);
  response.partial = partial;
  return response;
}

void SotwStream::AfterSend(const std::string& type_url, TypeState& state, const OutgoingResponse& response) {
  if (ClientSupportsSotwTtl() && std::any_of(response.resources.begin(), response.resources.end(),
                                             [](const ResourcePtr& r) { return r->ttl().has_value(); })) {
    ArmHeartbeat();
  }
  if (response.heartbeat) {
    // Changes nothing the client holds; only the nonce and the ledger move.
    state.last_nonce = response.nonce;
    return;
  }
  // Envoy keeps a changed cluster warming until it gets EDS for it, even if the endpoints did
  // not change: remember which clusters changed before `known` is updated.
  std::vector<std::string> changed_eds;
  if (type_url == kClusterType) {
    for (const ResourcePtr& cluster : response.resources) {
      auto known = state.known.find(cluster->name());
      if (known != state.known.end() && known->second != cluster->content_version()) {
        std::string eds = EdsServiceNameOf(*cluster);
        if (!eds.empty()) changed_eds.push_back(std::move(eds));
      }
    }
  }

  if (IsFullStateType(type_url)) state.known.clear();
  for (const ResourcePtr& resource : response.resources) {
    state.known[resource->name()] = resource->content_version();
    state.force.erase(resource->name());
  }
  state.sent_any = true;
  state.sent_version = response.version;
  state.last_nonce = response.nonce;
  state.respond_in_full = false;
  state.always_respond = false;

  if (!changed_eds.empty()) {
    auto eds = types_.find(kEndpointType);
    if (eds != types_.end()) {
      for (std::string& name : changed_eds) {
        if (eds->second.subscription.Covers(name)) eds->second.force.insert(std::move(name));
      }
      eds->second.dirty = true;
    }
  }
}

}  // namespace cxds
