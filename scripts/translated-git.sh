#!/usr/bin/env bash
# Builds a git that translates its messages (git ≥ 2.41, with gettext)
# into DIR (default target/translated-git), and makes the de_DE.UTF-8
# locale: tests/it/sync.rs runs `sync` with it under a German locale, to
# show that git-loopx does not depend on git speaking English. Debian's
# own git is too old for `fetch --porcelain`, and the git this machine
# runs may be built without gettext; the source comes from Debian's
# archive (trixie's git, 2.47 today), built with only what the tests use.
# Prints the directory holding the git binary.
set -euo pipefail
dest="$(realpath -m "${1:-target/translated-git}")"
if [ -x "$dest/bin/git" ]; then
  echo "$dest/bin"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! grep -qs '^de_DE.UTF-8' /etc/locale.gen || ! locale -a | grep -qi '^de_DE.utf8$'; then
  command -v locale-gen >/dev/null || apt-get install -yq locales >&2
  echo "de_DE.UTF-8 UTF-8" >>/etc/locale.gen
  locale-gen >&2
fi
missing=()
for tool in make gcc msgfmt; do command -v "$tool" >/dev/null || missing+=("$tool"); done
dpkg -s zlib1g-dev >/dev/null 2>&1 || missing+=(zlib1g-dev)
if [ "${#missing[@]}" -gt 0 ]; then
  pkgs=()
  for m in "${missing[@]}"; do
    case "$m" in msgfmt) pkgs+=(gettext) ;; *) pkgs+=("$m") ;; esac
  done
  apt-get install -yq "${pkgs[@]}" >&2
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
src_list=/etc/apt/sources.list.d/loopx-trixie-src.list
echo "deb-src http://deb.debian.org/debian trixie main" >"$src_list"
apt-get update -q >&2
(cd "$work" && apt-get source -q -d --only-source git >&2)
rm -f "$src_list"
tar -C "$work" -xf "$work"/git_*.orig.tar.xz
make -C "$(echo "$work"/git-*/)" -j"$(nproc)" prefix="$dest" \
  NO_CURL=1 NO_EXPAT=1 NO_TCLTK=1 NO_PERL=1 NO_PYTHON=1 NO_OPENSSL=1 \
  NO_GITWEB=1 NO_INSTALL_HARDLINKS=1 install >&2
echo "$dest/bin"
