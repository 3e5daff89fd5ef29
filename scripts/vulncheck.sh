#!/usr/bin/env bash
# Known vulnerabilities: runs govulncheck on the module against a local copy
# of the Go vulnerability database, and fails when the code reaches one.
#
#   scripts/vulncheck.sh            check ./... (what CI runs through test.sh)
#   scripts/vulncheck.sh ARGS...    passed to govulncheck instead of ./...
#
# vuln.go.dev is not always reachable (CI runners behind a proxy, offline
# machines), but the Go module proxy is: the database's source, the OSV
# entries under data/osv of the module golang.org/x/vulndb, comes through it
# like any module, and its cmd/indexdb writes the v1 database govulncheck
# reads with -db file://DIR. Everything is cached under $LOGSTORE_CACHE and
# rebuilt only when a version below changes.
#
# govulncheck reports a finding only when a call path from this module
# reaches the vulnerable symbol; modules that merely sit in go.mod are
# listed as informational and do not fail the check.
#
# Knobs (environment):
#   GOVULNCHECK_VERSION  golang.org/x/vuln release (v1.9.0)
#   VULNDB_VERSION       golang.org/x/vulndb version, a pseudo-version of
#                        its master (pinned, so a new entry changes CI only
#                        when someone moves the pin; "latest" follows it)
set -euo pipefail

LOGSTORE_TOOL=vulncheck
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$LOGSTORE_ROOT"

GOVULNCHECK_VERSION="${GOVULNCHECK_VERSION:-v1.9.0}"
VULNDB_VERSION="${VULNDB_VERSION:-v0.0.0-20261105234957-e22db6528018}"

# The toolchain go.mod names, not an older local one: the standard library
# is checked at the version the binary is built with.
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
need go
govulncheck=$(go_tool govulncheck golang.org/x/vuln/cmd/govulncheck "$GOVULNCHECK_VERSION")
indexdb=$(go_tool vulndb-indexdb golang.org/x/vulndb/cmd/indexdb "$VULNDB_VERSION")

if [[ $VULNDB_VERSION == latest ]]; then
	VULNDB_VERSION=$(cd / && GOFLAGS='' go list -m -f '{{.Version}}' golang.org/x/vulndb@latest)
fi
db="$LOGSTORE_CACHE/vulndb-$VULNDB_VERSION"
if [[ ! -f $db/.complete ]]; then
	say "building the vulnerability database $VULNDB_VERSION into $db (once)"
	src=$(cd / && GOFLAGS='' go mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" |
		sed -nE 's/^[[:space:]]*"Dir": "(.*)",?$/\1/p')
	[[ -d $src/data/osv ]] || die "golang.org/x/vulndb@$VULNDB_VERSION has no data/osv"
	rm -rf "$db"
	mkdir -p "$db"
	"$indexdb" -vulns "$src/data/osv" -out "$db" || die "indexdb failed"
	touch "$db/.complete"
fi

# Each third_party/ directory (iceberg-go, parquet-go) is a release with a
# patch (its PATCHES.md). govulncheck cannot tell a directory's version and
# so matches no vulnerability to it: check the code against the releases the
# copies were made from, through a go.mod without their replaces (the
# patches defer an initialisation and speed up a lookup; the calls are
# upstream's).
modfile=$(mktemp -d)
trap 'rm -rf "$modfile"' EXIT
cp go.mod go.sum "$modfile/"
forks=$(awk '{ for (i = 1; i < NF; i++) if ($(i + 1) == "=>" && $(i + 2) ~ /^\.\/third_party\//) print ($i ~ /^v[0-9]/ ? $(i - 1) : $i) }' go.mod)
released=
for mod in $forks; do
	go mod edit -dropreplace="$mod" "$modfile/go.mod"
	released+="${released:+, }$mod $(go list -m -f '{{.Version}}' "$mod")"
done
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-modfile=$modfile/go.mod -mod=mod"

say "govulncheck $GOVULNCHECK_VERSION, database $VULNDB_VERSION, $(go env GOVERSION); as released: ${released:-nothing}"
(($# > 0)) || set -- ./...
# Exit 3 means findings the code reaches; anything else non-zero is an error
# of the tool. Either fails the check.
"$govulncheck" -db "file://$db" "$@"
