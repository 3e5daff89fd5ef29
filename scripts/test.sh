#!/usr/bin/env bash
# Runs every test, the unit tests and the integration tests against the
# real services, in one pass (the integration build holds the unit tests
# too: a separate unit pass ran them twice, two minutes of CI). Installs what a fresh machine lacks (cached under
# $LOGSTORE_CACHE), starts the services that are not already running, and
# stops again only the ones it started, on failure too.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"
cd "$LOGSTORE_ROOT"

# Tests run with the Go that `go build` uses here: GOTOOLCHAIN is yours
# (environment or `go env -w`), and go.mod's go and toolchain lines decide as
# they do for plain go (see the Makefile).

bash "$here/setup.sh"
# The tests call python3 for pyarrow, the independent Parquet reader.
export PATH="$LOGSTORE_CACHE/venv/bin:$PATH"

started=()
# The zone lab test brings its own lab up and down; if the test binary is
# killed (a timeout) this trap takes it down, unless it was up before.
lab_was_up=0
if ip netns list 2>/dev/null | grep -q '^zl-core'; then lab_was_up=1; fi
cleanup() {
  local rc=$?
  if [ "$lab_was_up" = 0 ] && ip netns list 2>/dev/null | grep -q '^zl-core'; then
    echo "test: the zone lab was left up; taking it down" >&2
    bash "$here/zonelab.sh" down || true
    rc=1
  fi
  for ((i = ${#started[@]} - 1; i >= 0; i--)); do
    bash "$here/${started[i]}" stop || true
  done
  # Nothing the run started may outlive it (the tests start and stop their
  # own IMDS mocks).
  local dirs=(imds) svc
  if [ "$lab_was_up" = 0 ]; then dirs+=(zonelab); fi
  for svc in "${started[@]}"; do dirs+=("${svc%%-*}"); done # kafka-cluster.sh → kafka
  for svc in "${dirs[@]}"; do
    if pgrep -f "$LOGSTORE_STATE/$svc" >/dev/null; then
      echo "test: processes left running under $LOGSTORE_STATE/$svc:" >&2
      pgrep -af "$LOGSTORE_STATE/$svc" >&2
      rc=1
    fi
  done
  exit "$rc"
}
trap cleanup EXIT INT TERM

# Kafka's own default first-rebalance delay (the script's is 0, for quick
# single-member tests): members a test starts together all land in the first
# generation, instead of one reading everything before the others join.
export KAFKA_GROUP_REBALANCE_DELAY_MS="${KAFKA_GROUP_REBALANCE_DELAY_MS:-3000}"
# TestChaos (cmd/logstore) runs exactly once into files, an Iceberg table
# and Kafka, the combination whose commit cycle has the most steps, and
# the files' guarantee with it; CHAOS_EXACTLY_ONCE=0 runs the files alone.
# scripts/chaos/run.sh runs the long version.
[ "${CHAOS_EXACTLY_ONCE:-1}" = 0 ] && unset CHAOS_EXACTLY_ONCE || export CHAOS_EXACTLY_ONCE=1
if ! bash "$here/kafka-cluster.sh" status >/dev/null 2>&1; then
  started+=(kafka-cluster.sh)
  bash "$here/kafka-cluster.sh" start
  bash "$here/kafka-cluster.sh" start # idempotent: says so and returns at once
fi
if ! bash "$here/s3-server.sh" status >/dev/null 2>&1; then
  started+=(s3-server.sh)
  bash "$here/s3-server.sh" start
fi

echo "== known vulnerabilities (govulncheck, local copy of the Go vulnerability database)"
bash "$here/vulncheck.sh"
echo "== unit and integration tests (real Kafka, S3, IMDS mock; the zone lab in network namespaces)"
# -p 1: the integration tests share one cluster, and one of them stops a broker.
# -timeout is per test binary: cmd/logstore's took 19 minutes on 2 cores
# (2026-12-07), so 35m leaves room for a slower machine.
go test -count=1 -p 1 -timeout 35m -tags integration ./...
