#!/usr/bin/env bash
# Re-creates a patched copy of a Go module under third_party/ (go.mod
# replaces the module with it; why each copy exists: its PATCHES.md).
# scripts/iceberg-go-fork.sh and scripts/parquet-go-fork.sh call it with
# their module.
#
#   scripts/third-party-fork.sh MODULE DIR            the version go.mod requires
#   scripts/third-party-fork.sh MODULE DIR v1.2.3     another release (go.mod follows)
#
# The copy holds what the build needs and nothing else: the non-test .go
# files, the assembly (.s, .h) and the embedded files of every package of
# MODULE this module imports, under each build tag set it is built or tested
# with and on the platforms the image and developers build for; the license
# files (LICENSE*, NOTICE*, COPYING*) of the module and of those packages;
# the module's go.mod and go.sum. The release comes from the module cache
# (downloaded through the module proxy like any module), then every
# DIR/patches/*.patch is applied in name order. A patch that no longer
# applies stops the script: see DIR/PATCHES.md.
set -euo pipefail

LOGSTORE_TOOL=${LOGSTORE_TOOL:-third-party-fork}
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$LOGSTORE_ROOT"
need go patch

(($# >= 2)) || die "usage: $0 MODULE DIR [VERSION]"
mod=$1
fork=${2%/}
[[ $fork == third_party/* ]] || die "DIR must be under third_party/ (got '$fork')"
version=${3:-$(go list -m -f '{{.Version}}' "$mod")}
[[ $version == v* ]] || die "no version of $mod to copy (got '$version')"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The package list comes from this module's imports as they would be
# without the replacement (the copy may be missing or of another version):
# a go.mod of our own with the requirement at $version and no replace.
cp go.mod "$work/go.mod"
cp go.sum "$work/go.sum"
go mod edit -dropreplace="$mod" -require="$mod@$version" "$work/go.mod"
golist() { go list -modfile="$work/go.mod" -mod=mod "$@"; }
src=$(cd / && GOFLAGS='' go mod download -json "$mod@$version" |
	sed -nE 's/^[[:space:]]*"Dir": "(.*)",?$/\1/p')
[[ -d $src ]] || die "go mod download $mod@$version gave no directory"
say "copying $mod $version from $src"

# Packages and embedded files, each line "import/path file...". Test deps
# (-test) count: the tests may import packages of $mod the binary does not.
for tags in "" integration notable nodemo; do
	for platform in linux/amd64 linux/arm64 darwin/arm64; do
		GOOS=${platform%/*} GOARCH=${platform#*/} golist -deps -test -tags "$tags" \
			-f '{{.ImportPath}}{{range .EmbedFiles}} {{.}}{{end}}' ./...
	done
done | sed -nE "s#^($mod(/[^ ]*)?)( \[[^]]*\])?(( [^ ]+)*)\$#\1\4#p" | sort -u >"$work/packages"
[[ -s $work/packages ]] || die "this module imports no $mod package"

out="$work/copy"
mkdir -p "$out"
while read -r pkg embeds; do
	rel=${pkg#"$mod"}
	rel=${rel#/}
	dir="$out/${rel:-.}"
	mkdir -p "$dir"
	# Every non-test .go file and every assembly file, whatever its build
	# constraint: the package then builds for any GOOS/GOARCH (and with or
	# without the purego tag), not only the ones listed above. A package's
	# own license (code it took from elsewhere) goes with it.
	find "$src/${rel:-.}" -maxdepth 1 -type f \( \( -name '*.go' ! -name '*_test.go' \) \
		-o -name '*.s' -o -name '*.h' -o -name 'LICENSE*' -o -name 'NOTICE*' -o -name 'COPYING*' \) \
		-exec cp {} "$dir/" \;
	for f in $embeds; do
		mkdir -p "$(dirname "$dir/$f")"
		cp "$src/${rel:-.}/$f" "$dir/$f"
	done
done <"$work/packages"
[[ -f $src/LICENSE ]] || die "$mod $version has no LICENSE file: check its terms before copying it"
find "$src" -maxdepth 1 -type f \( -name go.mod -o -name go.sum -o -name 'LICENSE*' -o -name 'NOTICE*' -o -name 'COPYING*' \) \
	-exec cp {} "$out/" \;
chmod -R u+w "$out"

# The copy's own files (these notes and the patches) survive a re-creation.
mkdir -p "$out/patches"
if [[ -d $fork/patches ]]; then cp "$fork"/patches/*.patch "$out/patches/"; fi
if [[ -f $fork/PATCHES.md ]]; then cp "$fork/PATCHES.md" "$out/"; fi
for p in "$out"/patches/*.patch; do
	[[ -e $p ]] || continue
	say "applying patches/$(basename "$p")"
	patch -s -p1 --no-backup-if-mismatch -d "$out" <"$p" ||
		die "patches/$(basename "$p") does not apply to $version: re-do it by hand (PATCHES.md)"
done

rm -rf "$fork"
mkdir -p "$(dirname "$fork")"
mv "$out" "$fork"
go mod edit -require="$mod@$version" -replace="$mod=./$fork"
go mod tidy
say "$fork: $mod $version, $(wc -l <"$work/packages") packages, $(find "$fork" -name '*.go' | wc -l) .go files"
