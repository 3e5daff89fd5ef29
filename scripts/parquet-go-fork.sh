#!/usr/bin/env bash
# Re-creates third_party/parquet-go, the project's patched copy of
# github.com/parquet-go/parquet-go (go.mod replaces the module with it; why:
# third_party/parquet-go/PATCHES.md). How the copy is made:
# scripts/third-party-fork.sh.
#
#   scripts/parquet-go-fork.sh            the version go.mod requires
#   scripts/parquet-go-fork.sh v0.33.0    another release (go.mod follows)
set -euo pipefail
LOGSTORE_TOOL=parquet-go-fork exec "$(dirname "${BASH_SOURCE[0]}")/third-party-fork.sh" \
	github.com/parquet-go/parquet-go third_party/parquet-go "$@"
