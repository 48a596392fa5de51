// Soak (issue 11): `cxds-load --soak D --drive files` runs for D against `cxds serve`:
//  - N simulated proxies (SotW, Delta, or each connection picking one at random with
//    --mixed-protocols) connect and stay;
//  - every --change-interval the config file of the files drive is rewritten with the next
//    endpoint port (change k: port 20000+k), whether or not the last change has arrived;
//  - every 100 ms each open stream is closed with probability --churn x 0.1 (so --churn is
//    disconnects per stream per second) and its proxy reconnects, as a new stream with the
//    same node, after a random delay up to --reconnect-delay;
//  - the server's RSS (VmRSS of the cxds child) is sampled every --rss-interval into --rss-csv.
// Every random choice comes from one generator seeded with --seed, so a run's disconnects are
// reproducible (their timing still depends on the machine).
// At the end the changes stop, every disconnected proxy reconnects, and the run waits (up to
// --change-timeout) for quiescence. It then fails unless:
//  - the server publishes the last change (its /debug/config_dump of a connected proxy holds
//    the last port) and every open stream holds it too: lost updates = 0;
//  - no stream waited longer than --starve-after for a newer change while it was open (from
//    its start to its first change, then between changes): starved streams = 0;
//  - the server counts as many streams as are open, and reports none of their types STALE or
//    NACKED (/metrics, /debug/syncz);
//  - nothing was NACKed and no stream ended without being asked to;
//  - the server's RSS after warm-up (--warmup, default a fifth of the soak) grew by at most
//    --rss-growth-limit (median of the last three samples over the first three after warm-up).
// The verdicts themselves are in soak_check.h.
#pragma once

#include "load_options.h"

namespace cxds::load {

// Runs the soak; the exit code is 0 when every check passed, 1 when one failed, 2 on a usage
// or start-up error.
int RunSoak(const LoadOptions& options);

}  // namespace cxds::load
