# The two commands a newcomer needs:
#   make demo   run the job on an embedded three-zone Kafka (no setup) into
#               ./logstore-demo/run-<time>/; `make demo DEMO_FLAGS=--table`
#               commits the rows to an Iceberg table too (SQLite catalog),
#               in ./logstore-demo/run-<time>-table/
#   make test   unit and integration tests (one pass) against a real three-rack
#               Kafka cluster, an S3 server and an IMDS mock (installed and
#               started by scripts/test.sh, stopped again afterwards)
#   make zones  (root) three zones in network namespaces: brokers and workers
#               inside them, cross-zone bytes counted by the kernel
#
# Go: 1.26.8 or later builds it; go.mod's toolchain line asks for go1.26.11,
# a patch release with standard-library security fixes (scripts/vulncheck.sh
# finds 10 vulnerabilities this code reaches in go1.26.8's). make runs
# go exactly as you would by hand (no GOTOOLCHAIN of its own), so make and
# `go build` use the same Go: with Go's default GOTOOLCHAIN=auto an older go
# fetches go1.26.11; with GOTOOLCHAIN=local (`go env -w`) the installed one
# builds.
GO ?= go
# Flags of `logstore demo` (--records N, --table, ...).
DEMO_FLAGS ?=

.PHONY: build demo test unit bench zones clean

build:
	$(GO) build -o bin/logstore ./cmd/logstore

demo:
	$(GO) run ./cmd/logstore demo $(DEMO_FLAGS)

test:
	bash scripts/test.sh

unit:
	$(GO) test ./...

bench:
	bash scripts/bench

zones:
	bash scripts/zonelab.sh once

clean:
	rm -rf bin logstore-demo
