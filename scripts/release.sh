#!/usr/bin/env bash
# Builds release binaries of resourced: static (CGO_ENABLED=0), -trimpath,
# no build id, the version stamped with -ldflags, so that the same commit
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

mkdir -p dist
rm -f dist/SHA256SUMS
for target in "${targets[@]}"; do
	os="${target%/*}" arch="${target#*/}"
	out="dist/resourced-${version}-${os}-${arch}"
	echo "building ${out}" >&2
	CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" GOFLAGS=-buildvcs=false \
		go build -trimpath -ldflags "-s -w -buildid= -X main.version=${version}" -o "$out" ./cmd/resourced
done
(cd dist && sha256sum resourced-"${version}"-* > SHA256SUMS)
cat dist/SHA256SUMS
