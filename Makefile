# Entry points. `make run` and `make test` install what is missing, build, then run.
#   make run    the daemon (cxds serve) on the example mesh in examples/mesh
#   make demo   the teaching control plane (cxds demo) on 127.0.0.1:18000
#   make test   build and run every test: main tree, then AddressSanitizer+UBSan, then
#               ThreadSanitizer (server and cache tests), then each fuzzer briefly
#   make build  install dependencies and build build/cxds and the tests
#   make lint   layer rules (src/layers.txt), header sizes and clang-format (scripts/lint.py);
#               CI runs it
#   make format apply .clang-format to every C++ file
#   make fuzz   build the libFuzzer targets (clang) and run each for FUZZ_SECONDS (default 60);
#               see docs/fuzzing.md
#   make bench  the standard load scenarios and micro-benchmarks (about 15 minutes); writes
#               bench/results/DATE.md and bench/results/latest.json
#   make soak   the full soak (2,000 streams, a change every 200 ms, random reconnects, 10 minutes;
#               not in CI at this size); writes bench/results/soak-DATE/
SHELL := /bin/bash
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := true
export CCACHE_MAXSIZE ?= 5G

FUZZ_SECONDS ?= 60

.PHONY: deps build run run-bookinfo demo test test-main test-asan test-tsan build-fuzz fuzz test-fuzz bench bench-micro soak lint \
        format clean

deps:
	@scripts/install-deps.sh

build: deps
	@test -f $(BUILD)/build.ninja || cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/cxds serve --config-dir examples/mesh

# The Bookinfo-like mesh of examples/bookinfo (its README is the walkthrough).
run-bookinfo: build
	$(BUILD)/cxds serve --config-dir examples/bookinfo

demo: build
	$(BUILD)/cxds demo

# load_memory_soak (5,000 changes, about 4 minutes) runs with `make soak`, not here.
test-main: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -E '^load_memory_soak$$'

# Sanitizer trees reuse the main tree's generated Envoy API library. The soak tests (label
# soak: load_soak_ci, load_memory_soak) run in the main tree only: they judge timing and RSS,
# which the sanitizers change several-fold.
test-asan: build
	@test -f $(BUILD)-asan/build.ninja || cmake -S . -B $(BUILD)-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCXDS_SANITIZE=address,undefined -DCXDS_BUILD_BENCHMARKS=OFF -DCXDS_PREBUILT_API_DIR=$(CURDIR)/$(BUILD)/api
	cmake --build $(BUILD)-asan -j $(JOBS)
	cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -E 'teaching_checkpoints_(python|cpp)' -LE soak

# ThreadSanitizer checks cxds's own synchronisation (cxds::Mutex is pthread-based) in the unit
# and concurrency tests. The tests over real gRPC are left out: XdsServerTest, DeltaRestartTest,
# PipelineServerTest, BadClientsTest, LimitsOverGrpcTest, MtlsTest, ProxyStatusCliTest, ProxyConfigCliTest, CsdsTest,
# TlsCredentialsTest (its credentials start gRPC's certificate-watcher thread), and EtcdTest,
# EtcdSourceTest, EtcdTlsTest and ReplicasTest (an etcd watch is a gRPC client stream read on
# the source's thread). Debian's gRPC is not instrumented, so TSan cannot see how its
# completion queues order our reactions and reports gRPC's own inline code
# (callback_common.h); SotwStreamConcurrencyTest drives the same stream code from threads.
test-tsan: build
	@test -f $(BUILD)-tsan/build.ninja || cmake -S . -B $(BUILD)-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCXDS_SANITIZE=thread -DCXDS_BUILD_BENCHMARKS=OFF -DCXDS_PREBUILT_API_DIR=$(CURDIR)/$(BUILD)/api
	cmake --build $(BUILD)-tsan -j $(JOBS) --target cxds_tests
	cd $(BUILD)-tsan && TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/test/tsan.supp" \
	  ctest --output-on-failure -j $(JOBS) -L unit -E '^(XdsServerTest|DeltaRestartTest|PipelineServerTest|BadClientsTest|LimitsOverGrpcTest|MtlsTest|TlsCredentialsTest|EtcdTest|EtcdSourceTest|EtcdTlsTest|ReplicasTest|ProxyStatusCliTest|ProxyConfigCliTest|CsdsTest)\.'

# libFuzzer targets (test/fuzz, docs/fuzzing.md): clang with ASan+UBSan, only the sources the
# fuzzers reach, the main tree's generated Envoy API library (g++-built; both use libstdc++).
build-fuzz: build
	@test -f $(BUILD)-fuzz/build.ninja || cmake -S . -B $(BUILD)-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
	  -DCXDS_FUZZ=ON -DCXDS_PREBUILT_API_DIR=$(CURDIR)/$(BUILD)/api
	cmake --build $(BUILD)-fuzz -j $(JOBS) --target cxds_fuzzers

# Each fuzzer for FUZZ_SECONDS, one at a time, then the kept regression inputs.
fuzz: build-fuzz
	scripts/fuzz.sh $(BUILD)-fuzz $(FUZZ_SECONDS)

# The CI variant: 20 s per fuzzer (seed corpus plus what it finds in that time) and the
# regression inputs. New inputs go to a temporary directory, never into the repository.
test-fuzz: build-fuzz
	scripts/fuzz.sh $(BUILD)-fuzz 20

test: test-main test-asan test-tsan test-fuzz

# Google Benchmark micro-benchmarks (each beside its baseline; see bench/README.md): the push
# pipeline, then xDS resource serialization and fan-out and the snapshot cache's watches.
bench-micro: build
	$(BUILD)/bench/cxds_pipeline_bench --benchmark_counters_tabular=true
	$(BUILD)/bench/cxds_xds_bench --benchmark_counters_tabular=true

# The scenarios of issue 6 in one run (bench/run.sh): micro-benchmarks, 1,000/5,000/10,000 streams
# against cxds and the raw fan-out baseline, the 1,000-service mesh, a restart; then the report.
bench: build
	bench/run.sh $(BUILD)

lint: deps
	scripts/lint.py

format: deps
	git ls-files -z '*.h' '*.cc' | grep -zv '^api/' | xargs -0 clang-format -i --style=file

# The soak of issue 11 at full size (bench/soak.sh; SOAK_STREAMS, SOAK_DURATION, SOAK_CHURN and
# SOAK_SEED override). CI runs its 60-second version, the ctest load_soak_ci.
soak: build
	cd $(BUILD) && ctest --output-on-failure -R '^load_memory_soak$$'
	bench/soak.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-fuzz
