#!/usr/bin/env bash
# Builds release binaries of resourced: static (CGO_ENABLED=0), -trimpath,
# no build id, the version, VCS revision and commit date stamped with
# -ldflags, so that the same commit
# and Go version give the same bytes. Writes dist/resourced-<version>-<os>-<arch>
# and dist/SHA256SUMS.
#
#   scripts/release.sh [VERSION] [os/arch ...]
#
# VERSION defaults to `git describe --tags --always --dirty`; the targets to
# linux/amd64 linux/arm64 darwin/amd64 darwin/arm64.
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

mkdir -p dist
rm -f dist/SHA256SUMS
for target in "${targets[@]}"; do
	os="${target%/*}" arch="${target#*/}"
	out="dist/resourced-${version}-${os}-${arch}"
	echo "building ${out}" >&2
	CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" GOFLAGS=-buildvcs=false \
		go build -trimpath -ldflags "-s -w -buildid= -X main.version=${version} -X main.revision=${revision} -X main.buildDate=${build_date}" -o "$out" ./cmd/resourced
done
(cd dist && sha256sum resourced-"${version}"-* > SHA256SUMS)
cat dist/SHA256SUMS
