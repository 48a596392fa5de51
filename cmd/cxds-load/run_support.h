// Pieces every kind of cxds-load run uses (defined in main.cc).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "envoy/config/core/v3/base.pb.h"
#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"
#include "load_options.h"

namespace cxds::load {

// Raises the open-file limit towards `needed` (sockets: channels, and the streams of a server
// started as a child, which inherits it); warns when it cannot.
void RaiseFileLimit(int needed);
void PinTo(int cpu);
// The node of simulated proxy `index` (see docs/load.md); `shared_id` replaces its id.
envoy::config::core::v3::Node MakeNode(const LoadOptions& options, const std::string& shared_id, int index);
// A channel of its own (its own TCP connection) to `address`.
// `credentials`: null for plaintext (see ChannelCredentials).
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address, int index,
                                           const std::shared_ptr<grpc::ChannelCredentials>& credentials = nullptr);
// TLS credentials from --tls-ca/--tls-cert/--tls-key, or null (plaintext) without --tls-ca.
// Files that cannot be read are an error naming them.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(const LoadOptions& options);

}  // namespace cxds::load
