#!/usr/bin/env bash
# Installs what cxds needs on a Debian 12 machine: Debian packages with apt-get (only those
# missing), then the pinned npm packages from package-lock.json (npm ci) when node_modules is
# missing or older than the lock file. Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build ccache g++ pkg-config clang-format
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev libssl-dev openssl
  libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev libcpp-httplib-dev libre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  python3-grpcio
  etcd-server
  gnuplot-nox
  systemd curl
  chromium
)
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -d node_modules/@grpc/grpc-js-xds ] || [ ! -d node_modules/etcd3/proto ] || [ ! -d node_modules/playwright-core ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "install-deps: npm ci (pinned in package-lock.json)"
  npm ci --no-audit --no-fund
fi
