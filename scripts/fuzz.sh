#!/usr/bin/env bash
# Runs the libFuzzer targets of a fuzz build tree (make build-fuzz) one after another, each for
# SECONDS, then replays the kept crash inputs (test/fuzz/regressions/TARGET/*). Prints per
# target: executions, executions per second, coverage (libFuzzer's cov:), result.
#
#   scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]
#
# The seed corpus (test/fuzz/corpus/TARGET) is only read: new inputs go to a temporary corpus
# (FUZZ_WORK, default a fresh temporary directory) that is removed at the end unless
# FUZZ_KEEP=1. A crash input is saved there under artifacts/ and its path printed: to keep it
# as a regression, copy it to test/fuzz/regressions/TARGET/ once the bug is fixed.
# Exits non-zero if any target found a crash or an invariant violation, or a regression fails.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS [TARGET...]" >&2
  exit 2
fi
build=$1
seconds=$2
shift 2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(yaml_loader_fuzzer config_validator_fuzzer node_identity_fuzzer sotw_stream_fuzzer delta_stream_fuzzer
           etcd_mirror_fuzzer)
fi

work=${FUZZ_WORK:-$(mktemp -d /tmp/cxds-fuzz.XXXXXX)}
mkdir -p "$work"
[ "${FUZZ_KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT

# Leaks are reported by the unit tests under ASan; here they would only slow each run down.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=0
summary=()
for target in "${targets[@]}"; do
  binary=$build/fuzz/$target
  if [ ! -x "$binary" ]; then
    echo "fuzz: $binary is missing (make build-fuzz)" >&2
    failed=1
    continue
  fi
  corpus=$work/corpus/$target
  artifacts=$work/artifacts/$target
  mkdir -p "$corpus" "$artifacts"
  dict=()
  case $target in
    yaml_loader_fuzzer|config_validator_fuzzer) dict=(-dict=test/fuzz/yaml.dict) ;;
  esac
  log=$work/$target.log
  echo "fuzz: $target for ${seconds}s"
  # The first corpus directory is the writable one; the seeds are read only.
  "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
    "${dict[@]}" -artifact_prefix="$artifacts/" "$corpus" "test/fuzz/corpus/$target" >"$log" 2>&1
  status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | sed 's/cov: //')
  result=ok
  if [ $status -ne 0 ]; then
    result="FAILED (exit $status)"
    failed=1
    echo "fuzz: $target failed; the end of its log ($log):" >&2
    grep -v '^#' "$log" | tail -40 >&2
    ls "$artifacts" | sed "s|^|fuzz: crash input $artifacts/|" >&2
  fi
  regressions=test/fuzz/regressions/$target
  if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
    if "$binary" "$regressions"/* >"$work/$target.regressions.log" 2>&1; then
      result="$result, $(ls "$regressions" | wc -l) regressions pass"
    else
      result="$result, REGRESSION FAILED"
      failed=1
      tail -40 "$work/$target.regressions.log" >&2
    fi
  fi
  summary+=("$(printf '%-26s %12s %10s %8s  %s' "$target" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$result")")
done

printf '\n%-26s %12s %10s %8s  %s\n' target executions exec/s cov result
printf '%s\n' "${summary[@]}"
[ "${FUZZ_KEEP:-0}" = 1 ] && echo "fuzz: corpus and logs kept in $work"
exit $failed
