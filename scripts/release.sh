#!/usr/bin/env bash
# Builds release archives of resourced: a static (CGO_ENABLED=0), -trimpath
# binary with no build id and the version, VCS revision and commit date
# stamped with -ldflags, so that the same commit and Go version give the
# same bytes; with LICENSE, README.md, CHANGELOG.md, the example configs
# and the systemd unit and drop-in. Writes
# $DIST_DIR/resourced-<version>-<os>-<arch>.tar.gz, each unpacking to a
# directory of that name, and $DIST_DIR/SHA256SUMS.
#
#   scripts/release.sh [VERSION] [os/arch ...]
#
# VERSION defaults to `git describe --tags --always --dirty`; the targets to
# linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; DIST_DIR to dist.
# The archives are reproducible with GNU tar (entries sorted, owner 0,
# mtime the commit time, gzip without a name or time).
set -euo pipefail
cd "$(dirname "$0")/.."

version="${1:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
fi
# The commit time, for reproducible archives and for SOURCE_DATE_EPOCH users.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
# The VCS revision and its date, stamped beside the version (-buildvcs=false
# keeps the toolchain's own VCS stamp out, so a tarball build is the same):
# `resourced version` and resourced_build_info show them.
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then
	revision="${revision}-modified"
fi
build_date="$(date -u -d "@${SOURCE_DATE_EPOCH}" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r "${SOURCE_DATE_EPOCH}" +%Y-%m-%dT%H:%M:%SZ)"

dist="${DIST_DIR:-dist}"
mkdir -p "$dist"
dist="$(cd "$dist" && pwd)"
rm -f "$dist/SHA256SUMS"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
archives=()
for target in "${targets[@]}"; do
	os="${target%/*}" arch="${target#*/}"
	name="resourced-${version}-${os}-${arch}"
	echo "building ${dist}/${name}.tar.gz" >&2
	mkdir -p "$stage/$name/configs" "$stage/$name/deploy"
	CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" GOFLAGS=-buildvcs=false \
		go build -trimpath -ldflags "-s -w -buildid= -X main.version=${version} -X main.revision=${revision} -X main.buildDate=${build_date}" -o "$stage/$name/resourced" ./cmd/resourced
	cp LICENSE README.md CHANGELOG.md "$stage/$name/"
	cp configs/*.example.yaml "$stage/$name/configs/"
	cp deploy/resourced.service deploy/resourced-node-upstreams.conf "$stage/$name/deploy/"
	find "$stage/$name" -type d -exec chmod 0755 {} +
	find "$stage/$name" -type f -exec chmod 0644 {} +
	chmod 0755 "$stage/$name/resourced"
	tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@${SOURCE_DATE_EPOCH}" \
		-cf - "$name" | gzip -9n >"$dist/${name}.tar.gz"
	archives+=("${name}.tar.gz")
done
(cd "$dist" && sha256sum "${archives[@]}" >SHA256SUMS)
cat "$dist/SHA256SUMS"
