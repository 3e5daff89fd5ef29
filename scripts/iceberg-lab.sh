#!/usr/bin/env bash
# The many-writers lab of the table sink: six members (in one process,
# each with its own catalog connection, spool and commit queue) commit two
# partitions' batches each, back to back, to one table, at commit_interval
# 0s, 1s and 10s, on a SQLite catalog with a local warehouse and on the
# REST catalog (scripts/iceberg-rest.sh, its warehouse on the S3 server,
# which must be running); it prints commits/s, commit retries, p99 batch
# commit latency and snapshots/hour. Back to back is the worst case (a
# member's next batch is ready as soon as its last is in); a job's batches
# come every batch.max_age.
#
#   scripts/iceberg-lab.sh            (LAB_DURATION=60s per interval)
#
# Knobs (environment): LAB_DURATION, LAB_MEMBERS (6), LAB_CATALOGS
# (sqlite,rest). The lab starts and stops a REST catalog of its own (a
# free port, its own state folder), beside any other.
#
# Not in CI: minutes of load on the machine. Figures in BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
LAB_DURATION="${LAB_DURATION:-60s}" LAB_CATALOGS="${LAB_CATALOGS:-sqlite,rest}" \
	go test -tags lab -count=1 -timeout 60m -run TestLabManyWriters -v ./sink/iceberg/ 2>&1 |
	grep -E '^\s+manywriters_lab_test.go:[0-9]+: (LAB|iceberg-rest)|^(ok|FAIL)'
