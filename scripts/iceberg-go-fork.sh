#!/usr/bin/env bash
# Re-creates third_party/iceberg-go, the project's patched copy of
# github.com/apache/iceberg-go (go.mod replaces the module with it; why:
# third_party/iceberg-go/PATCHES.md). How the copy is made:
# scripts/third-party-fork.sh.
#
#   scripts/iceberg-go-fork.sh            the version go.mod requires
#   scripts/iceberg-go-fork.sh v0.8.0     another release (go.mod follows)
set -euo pipefail
LOGSTORE_TOOL=iceberg-go-fork exec "$(dirname "${BASH_SOURCE[0]}")/third-party-fork.sh" \
	github.com/apache/iceberg-go third_party/iceberg-go "$@"
