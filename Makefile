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
# Build tags of `make build`: notable leaves out the table sink
# (sinks.iceberg, `logstore table`) and with it iceberg-go, Arrow and the
# catalogs' SDKs: a 34 MB binary instead of 100 MB (stripped, 2026-12-07).
# nodemo leaves out `logstore demo` and its embedded Kafka (the image does).
TAGS ?=
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: build demo test unit bench zones clean

# Stripped (-s -w), as the image builds it: the symbol tables are a third
# of the binary and nothing at run time reads them (panics still print
# file:line; profiles resolve against the unstripped build of the same
# commit). The link flags (-s -w -X) do not change a compiled package, so
# the build reuses what `go build`, `go test` and `go vet` compiled.
# Without -trimpath: it changes every package's compilation, so a build with
# it shares nothing with a build without (every package compiled again,
# about 8 minutes on two cores after a `go test`). The trade-off: this
# binary's panics and profiles name files by this checkout's absolute path.
# The image (Dockerfile) builds with -trimpath, for a binary that names no
# builder's paths and is the same wherever it is built;
# `make build GOFLAGS=-trimpath` does that here.
build:
	$(GO) build -tags '$(TAGS)' -ldflags '-s -w -X main.version=$(VERSION)' -o bin/logstore ./cmd/logstore

# The demo links the table sink only when asked for it (--table): a first
# `make demo` on a fresh machine then downloads 109 MiB of modules instead
# of 374 MiB and compiles 579 packages instead of 903.
demo:
	$(GO) run -tags '$(if $(findstring --table,$(DEMO_FLAGS)),,notable)' ./cmd/logstore demo $(DEMO_FLAGS)

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
