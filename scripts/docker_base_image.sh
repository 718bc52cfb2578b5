#!/usr/bin/env bash
# Creates the base image docker/Dockerfile starts FROM (debian:bookworm-slim) when the Docker engine does
# not have it and cannot pull it (a machine without registry access). With a registry this script is not
# needed: `docker build` pulls the official image. The image is a debootstrap "minbase" root file system
# trimmed the way the official slim image is (no docs, man pages or locales, and dpkg told to keep them
# out of later installs), imported as debian:bookworm-slim.
#   scripts/docker_base_image.sh [IMAGE]     (default debian:bookworm-slim)
# Environment: MIRROR (default: the first URI of /etc/apt/sources.list.d/debian.sources, else deb.debian.org).
set -euo pipefail
IMAGE=${1:-debian:bookworm-slim}

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "docker_base_image: $IMAGE is present"
  exit 0
fi
if [ -z "${MIRROR:-}" ]; then
  MIRROR=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  MIRROR=${MIRROR:-http://deb.debian.org/debian}
fi
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
if ! command -v debootstrap >/dev/null; then
  echo "docker_base_image: installing debootstrap"
  $SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends debootstrap
fi

ROOT=$(mktemp -d /tmp/gossipd-base.XXXXXX)
trap '$SUDO rm -rf "$ROOT"' EXIT
echo "docker_base_image: debootstrap bookworm from $MIRROR (about a minute)"
$SUDO debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" >"$ROOT.log" 2>&1 || {
  tail -20 "$ROOT.log"; echo "docker_base_image: debootstrap failed (log: $ROOT.log)" >&2; exit 1; }
rm -f "$ROOT.log"

# What the official slim image leaves out, for this root and for every later apt-get install.
$SUDO tee "$ROOT/etc/dpkg/dpkg.cfg.d/docker-slim" >/dev/null <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
CFG
$SUDO find "$ROOT/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
$SUDO rm -rf "$ROOT"/usr/share/{man,info,locale,lintian}/* "$ROOT"/var/cache/apt/*.bin "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/log/*.log
# As the official image: apt deletes downloaded packages after installing them.
$SUDO tee "$ROOT/etc/apt/apt.conf.d/docker-clean" >/dev/null <<'CFG'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
CFG
# Keep the image's apt pointed at the same mirror (debootstrap writes a one-line sources.list).
echo "deb $MIRROR bookworm main" | $SUDO tee "$ROOT/etc/apt/sources.list" >/dev/null

$SUDO tar -C "$ROOT" -c . | docker import -c 'CMD ["bash"]' - "$IMAGE" >/dev/null
echo "docker_base_image: created $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
