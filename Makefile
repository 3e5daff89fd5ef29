# The two commands a newcomer needs:
#   make demo   run the job on an embedded Kafka (no setup) into ./logstore-demo/
#   make test   unit tests, then integration tests against a real three-rack
#               Kafka cluster, an S3 server and an IMDS mock (installed and
#               started by scripts/test.sh, stopped again afterwards)
#   make zones  (root) three zones in network namespaces: brokers and workers
#               inside them, cross-zone bytes counted by the kernel
GO ?= go
# go.mod's toolchain line names the patched Go release; "auto" fetches it
# through the module proxy when the local go is older. An explicit
# GOTOOLCHAIN in the environment wins.
export GOTOOLCHAIN ?= auto

.PHONY: build demo test unit bench zones clean

build:
	$(GO) build -o bin/logstore ./cmd/logstore

demo:
	$(GO) run ./cmd/logstore demo

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
