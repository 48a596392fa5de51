// Building protobuf descriptors up front.
//
// protobuf builds the descriptors of generated types lazily: a type's file on its first
// GetDescriptor(), a field's type on its first type() call. That is thread-safe, but it happens
// inside Debian's uninstrumented libprotobuf, so ThreadSanitizer cannot see the synchronisation
// and reports a later read of a descriptor's name on another thread as a race. It also puts the
// building cost on the first push instead of on start-up. Building every descriptor cxds uses
// once, before other threads start, removes both.
#pragma once

#include "absl/status/status.h"

namespace cxds {

// Builds the descriptor of every message type cxds sends, receives or packs into an Any, and of
// every type reachable from them through fields and file imports, with their generated classes'
// default instances and reflection. Call it on one thread before starting others; the work is
// done once per process, and later calls return the first one's result. NotFound names a root
// type missing from the binary (a build error, not a runtime condition).
absl::Status PreloadXdsDescriptors();

// How many message types PreloadXdsDescriptors() reached (for tests).
int PreloadedDescriptorCount();

}  // namespace cxds
