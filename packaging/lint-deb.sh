#!/usr/bin/env bash
# lintian on a built .deb, as `make deb` runs it (packaging/build-deb.sh). Every tag lintian
# still emits (errors, warnings, information) is overridden in packaging/debian/lintian-overrides
# with the reason; a new one fails.
#
# As root it runs as nobody (lintian advises against root; it only reads the package), on a copy
# in a temporary folder nobody can read, and from that folder: runuser keeps the working
# directory, and lintian fails ("Can't cd to ...: Permission denied") when nobody cannot enter
# it, as with a checkout in /root or any other 0700 folder.
#
# Usage: packaging/lint-deb.sh PACKAGE.deb
set -euo pipefail
[ $# = 1 ] && [ -f "$1" ] || { echo "usage: $0 PACKAGE.deb" >&2; exit 64; }
DEB=$1
LINTIAN=(lintian)
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
    LINT_DIR=$(mktemp -d /tmp/macroengine-lintian.XXXXXX)
    trap 'rm -rf "$LINT_DIR"' EXIT
    cp "$DEB" "$LINT_DIR/"; chmod 755 "$LINT_DIR"; chmod 644 "$LINT_DIR/$(basename "$DEB")"
    DEB=$(basename "$DEB")
    cd "$LINT_DIR"
    LINTIAN=(runuser -u nobody -- env HOME="$LINT_DIR" lintian)
fi
"${LINTIAN[@]}" --display-info --fail-on error,warning,info "$DEB"
