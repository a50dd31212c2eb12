#!/usr/bin/env bash
# `make packaging-test`: the packaging scripts' checks that need no release build (make test
# runs it before deb-test, which builds and installs the package).
#
#   - packaging/macro-files.sh, which `make deb` and `make install-user` ship the example macros
#     from, lists the files git tracks in macros/, not an untracked scratch file; outside a git
#     checkout (or in a folder of another repository) it falls back to packaging/macro-files.txt,
#     which must equal `git ls-files macros/`;
#   - `make install-user-files` installs no scratch file;
#   - packaging/lint-deb.sh runs lintian as root from a 0700 folder (a checkout in /root);
#   - packaging/man-pages.sh, on the pages of the debug build: `man macro run` finds
#     macro-run(1), no macro.help(1), macrod(8) with ENVIRONMENT and FILES and no subcommand.
#
# Usage: Tests/Package/packaging-test.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd -P)
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok: $1"; }
bad() { failed=$((failed + 1)); echo "FAILED: $1"; [ $# -lt 2 ] || echo "$2" | sed 's/^/    /'; }
# same DESCRIPTION EXPECTED ACTUAL
same() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "$(diff <(echo "$2") <(echo "$3"))"; fi; }

TMP=$(mktemp -d /tmp/macroengine-packaging-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# The shipped list, without its comment lines.
LISTED=$(grep -v '^#' packaging/macro-files.txt)
if TOP=$(git rev-parse --show-toplevel 2>/dev/null) && [ "$(cd "$TOP" && pwd -P)" = "$REPO" ]; then
    same "packaging/macro-files.txt is git ls-files macros/" "$(git ls-files macros/)" "$LISTED"
else
    echo "skip: packaging/macro-files.txt against git ls-files (not a git checkout)"
fi

# A checkout of its own: the packaging scripts, the Makefile, config/ and the tracked macros,
# committed; then scratch files beside them.
CO=$TMP/outer/checkout
mkdir -p "$CO"
cp -r Makefile packaging config "$CO/"
while IFS= read -r f; do install -D -m 644 "$f" "$CO/$f"; done <<< "$LISTED"
GIT=(git -C "$CO" -c user.name=test -c user.email=test@example.invalid -c init.defaultBranch=main)
"${GIT[@]}" init -q && "${GIT[@]}" add . && "${GIT[@]}" commit -q -m checkout
echo 'function scratch() { while (true) {} }' > "$CO/macros/scratch.js"
echo 'var scratchHelper = 1;' > "$CO/macros/lib/scratch.js"
same "macro-files.sh lists the tracked macros, not the untracked scratch files" "$LISTED" "$("$CO/packaging/macro-files.sh")"
mv "$CO/macros/reset.js" "$TMP/reset.js"
same "macro-files.sh leaves out a tracked macro deleted in the work tree" "$(echo "$LISTED" | grep -vx macros/reset.js)" "$("$CO/packaging/macro-files.sh")"
mv "$TMP/reset.js" "$CO/macros/reset.js"

# make install-user-files from that checkout, into a temporary HOME (BIN: stand-ins).
mkdir -p "$TMP/bin" "$TMP/home"
for tool in macro macro-local macrod; do printf '#!/bin/sh\n' > "$TMP/bin/$tool"; chmod 755 "$TMP/bin/$tool"; done
if out=$(make -s -C "$CO" install-user-files BIN="$TMP/bin" HOME="$TMP/home" 2>&1); then
    installed=$(cd "$TMP/home/.local/share/macroengine/macros" && find . -type f | sed 's|^\./|macros/|' | sort)
    same "make install-user-files installs the tracked macros, not the scratch files" "$(echo "$LISTED" | sort)" "$installed"
else
    bad "make install-user-files" "$out"
fi

# No git: an exported tree, and one in a folder of another repository that does not track it.
rm -rf "$CO/.git"
same "outside git, macro-files.sh lists packaging/macro-files.txt" "$LISTED" "$("$CO/packaging/macro-files.sh")"
git -C "$TMP/outer" init -q
same "in another repository's folder, macro-files.sh lists packaging/macro-files.txt" "$LISTED" "$("$CO/packaging/macro-files.sh")"

# lintian as root from a folder nobody can enter: it reads the package and reports its tags
# (a bare package has many; what matters is that lintian ran), not "Can't cd to ...".
if [ "$(id -u)" = 0 ] && command -v lintian >/dev/null && command -v runuser >/dev/null; then
    mkdir -p "$TMP/pkg/DEBIAN" && mkdir -m 700 "$TMP/private"
    printf 'Package: bare\nVersion: 1.0\nArchitecture: all\nMaintainer: Test <test@example.invalid>\nDescription: a bare package\n for the test\n' > "$TMP/pkg/DEBIAN/control"
    dpkg-deb --root-owner-group -b "$TMP/pkg" "$TMP/private/bare.deb" >/dev/null
    out=$(cd "$TMP/private" && "$REPO/packaging/lint-deb.sh" bare.deb 2>&1)
    if echo "$out" | grep -q "^E: bare: no-copyright-file" && ! echo "$out" | grep -q "Can't cd"; then
        ok "packaging/lint-deb.sh runs lintian as nobody from a 0700 folder"
    else
        bad "packaging/lint-deb.sh runs lintian as nobody from a 0700 folder" "$out"
    fi
else
    echo "skip: lintian as root from a 0700 folder (needs root, lintian and runuser)"
fi

# The manual pages from the debug build (make test built it; generate-manual is built here, a
# few seconds): `man macro run` finds macro-run(1), there is no macro.help(1), and macrod(8)
# claims no subcommand and has ENVIRONMENT and FILES.
SWIFT=${SWIFT:-swift}
if BIN=$("$SWIFT" build --show-bin-path 2>/dev/null) && [ -x "$BIN/macro" ] && [ -x "$BIN/macrod" ] \
    && "$SWIFT" build --product generate-manual > "$TMP/generate-manual.log" 2>&1; then
    mkdir -p "$TMP/raw/1" "$TMP/raw/8" "$TMP/man/man1" "$TMP/man/man8"
    "$BIN/generate-manual" "$BIN/macro" --section 1 --multi-page --date 2026-01-01 --authors test --output-directory "$TMP/raw/1"
    "$BIN/generate-manual" "$BIN/macrod" --section 8 --date 2026-01-01 --authors test --output-directory "$TMP/raw/8"
    if out=$(packaging/man-pages.sh "$TMP/raw" 2>&1); then
        cp "$TMP"/raw/1/* "$TMP/man/man1/"; cp "$TMP"/raw/8/* "$TMP/man/man8/"
        same "man macro run finds macro-run(1)" "$TMP/man/man1/macro-run.1" "$(MANPATH=$TMP/man man -w macro run 2>&1)"
        same "macro(1) and one page per subcommand, no macro.help(1)" \
            "$({ echo macro.1; "$BIN/macro" --help | sed -n '/^SUBCOMMANDS:/,$s/^  \([a-z]\+\) .*/macro-\1.1/p'; } | LC_ALL=C sort)" \
            "$(cd "$TMP/man/man1" && ls | LC_ALL=C sort)"
        same "macro-run(1) names itself macro-run, its SYNOPSIS macro run" "macro-run — Run a macro|macro run name [arg...]" \
            "$(MANPAGER=cat MANWIDTH=200 man -l "$TMP/man/man1/macro-run.1" 2>&1 | sed -n '/^NAME/{n;s/^ *//;s/ and print.*//;h};/^SYNOPSIS/{n;s/^ *//;s/ \[--socket.*//;H;x;s/\n/|/p}')"
        macrod8=$(MANPAGER=cat MANWIDTH=200 man -l "$TMP/man/man8/macrod.8" 2>&1)
        for section in ENVIRONMENT FILES "SEE ALSO"; do
            if echo "$macrod8" | grep -qx "$section"; then ok "macrod(8) has $section"; else bad "macrod(8) has $section" "$macrod8"; fi
        done
        if echo "$macrod8" | grep -q "else ~/.config/macroengine/macroengine.yaml"; then ok "macrod(8): --config's default names ~/.config/macroengine/macroengine.yaml"
        else bad "macrod(8): --config's default names ~/.config/macroengine/macroengine.yaml" "$macrod8"; fi
        if echo "$macrod8" | grep -qi "subcommand"; then bad "macrod(8) claims no subcommand" "$macrod8"; else ok "macrod(8) claims no subcommand"; fi
        warnings=$(for page in "$TMP"/man/man*/*; do groff -mandoc -ww -z "$page" 2>&1; done)
        same "groff -ww finds nothing to warn about in the pages" "" "$warnings"
    else
        bad "packaging/man-pages.sh" "$out"
    fi
else
    echo "skip: manual pages (no debug build of macro and macrod, or generate-manual did not build: $(tail -3 "$TMP/generate-manual.log" 2>/dev/null))"
fi

echo "packaging-test: $passed passed, $failed failed"
[ "$failed" = 0 ]
