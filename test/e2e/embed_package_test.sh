#!/usr/bin/env bash
# The library as a package (issue 15): installs the build tree's cxds with `cmake --install`,
# builds examples/embed against the installed package alone (find_package(cxds)), runs it, and
# routes a real proxyless gRPC client (Node @grpc/grpc-js-xds) through it to a backend. The
# example prints each ACK it sees; the test checks the client's calls and the ACKs.
# Loopback only; every process is bounded in time.
#
#   embed_package_test.sh BUILD_DIR SOURCE_DIR WORK_DIR BASE_PORT
set -euo pipefail
build=$1 src=$2 work=$3 port=$4
backend_port=$((port + 1))
node=${NODE:-node}
rm -rf "$work" && mkdir -p "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
fail() { echo "FAIL $*"; for f in "$work"/*.log; do echo "--- $f"; tail -20 "$f"; done; exit 1; }

cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" || fail "cmake --install"
test -f "$work/prefix/lib/cmake/cxds/cxdsConfig.cmake" || fail "no cxdsConfig.cmake installed"
echo "PASS installed: $(find "$work/prefix/include/cxds" -name '*.h' | wc -l) headers, $(ls "$work/prefix/lib"/*.a | wc -l) libraries"

launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Only the installed prefix: the repository's own src/ is not on any include path.
cmake -S "$src/examples/embed" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" "${launcher[@]}" \
  > "$work/configure.log" 2>&1 || fail "configure examples/embed against the package"
cmake --build "$work/build" > "$work/build.log" 2>&1 || fail "build examples/embed against the package"
if grep -q -- "-I$src/src\|-isystem $src/src" "$work/build/build.ninja"; then fail "the example saw the source tree"; fi
echo "PASS examples/embed built with find_package(cxds)"

setpriv --pdeathsig KILL "$node" "$src/examples/teaching/inventory_server.js" --name embedded \
  --port "$backend_port" --max-seconds 60 > "$work/backend.log" 2>&1 &
pids+=($!)
setpriv --pdeathsig KILL "$work/build/embedded-control-plane" --xds-port "$port" \
  --backend "127.0.0.1:$backend_port" --max-seconds 60 > "$work/embed.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do grep -q '^SERVING' "$work/embed.log" && break; sleep 0.1; done
grep -q '^SERVING' "$work/embed.log" || fail "the embedded control plane did not start"

cat > "$work/bootstrap.json" <<JSON
{"xds_servers":[{"server_uri":"127.0.0.1:$port","channel_creds":[{"type":"insecure"}],"server_features":["xds_v3"]}],
 "node":{"id":"embed-client-1","locality":{}}}
JSON
result=$(GRPC_XDS_BOOTSTRAP="$work/bootstrap.json" timeout 60 "$node" "$src/examples/mesh-client/mesh_client.js" \
  --target xds:///hello.embed.local:8080 --calls 20 --deadline-ms 15000) || fail "mesh_client: $result"
echo "$result" > "$work/client.json"
grep -q '"ok":20' "$work/client.json" && grep -q '"embedded":20' "$work/client.json" \
  || fail "expected 20 calls to reach the backend through the embedded control plane: $result"
echo "PASS a real gRPC xDS client routed 20 calls through the embedded control plane"
for type in Listener RouteConfiguration Cluster ClusterLoadAssignment; do
  grep -q "^ACK node=embed-client-1 type=type.googleapis.com/envoy.config.[a-z]*.v3.$type version=v1" "$work/embed.log" \
    || fail "no ACK of $type reported by the embedder's callbacks"
done
echo "PASS the embedder saw the client ACK all four types"
echo "embed package e2e: OK"
