#!/usr/bin/env bash
# `make deb`: the Debian package macroengine_VERSION_ARCH.deb from the release build, with
# Debian's own tools (dpkg-shlibdeps for the libraries' versions, dpkg-deb, lintian).
#
#   /usr/bin/macro, macro-local, macrod          release binaries (RELEASE_FLAGS), stripped
#   /usr/lib/macroengine/*.so                    the Swift runtime and Foundation, once, for
#                                                 macro-local and macrod (macro links them statically)
#   /usr/lib/systemd/user/macrod.service         config/macrod.service, ExecStart in /usr/bin
#   /usr/libexec/macroengine/macrod-user-setup   the unit's first start: config and macros for the user
#   /usr/share/macroengine/{config,macros}       the example config and macros (the repo's layout)
#   bash, zsh and fish completions               `macro --generate-completion-script SHELL`
#   /usr/share/man/man1/macro*.1.gz, man8/macrod.8.gz   swift-argument-parser's generate-manual,
#                                                 finished by packaging/man-pages.sh
#   /usr/share/doc/macroengine                   copyright, changelog, README.md and docs/
#   DEBIAN/postrm                                 purge: the dangling links `systemctl --user enable` made
#
# The version is the one constant the binaries print (`macrod --version`, Sources/MacroBase/
# Version.swift); packaging/debian/changelog must start with it. Depends: what dpkg-shlibdeps
# finds in the binaries, JavaScriptCore at least at the version built against, and the Debian
# packages whose files the binaries open at run time (dpkg-query: the versions installed here).
#
# Environment: SWIFT (swift), RELEASE_FLAGS (the Makefile's), DEB_OUTPUT_DIR (the repo's root),
# MANUAL=plugin (the man pages through `swift package plugin generate-manual`, see below).
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
read -r -a RELEASE <<< "${RELEASE_FLAGS:--c release -Xswiftc -use-ld=lld -Xlinker -rpath=\$ORIGIN/../lib/macroengine}"
OUT=${DEB_OUTPUT_DIR:-.}
PKG=macroengine
DEBIAN_DIR=packaging/debian
WORK=.build/deb
ROOT=$WORK/root

fail() { echo "error: $*" >&2; exit 1; }
step() { echo "==> $*"; }

BIN=$("$SWIFT" build "${RELEASE[@]}" --show-bin-path)
for tool in macro macro-local macrod; do
    [ -x "$BIN/$tool" ] || fail "$BIN/$tool is missing: run make release first"
done

# One version: the binaries' constant, which the changelog must match.
VERSION=$("$BIN/macrod" --version)
for tool in macro macro-local; do
    v=$("$BIN/$tool" --version)
    [ "$v" = "$VERSION" ] || fail "$tool --version says $v, macrod --version says $VERSION"
done
CHANGELOG_VERSION=$(dpkg-parsechangelog -l "$DEBIAN_DIR/changelog" -S Version)
[ "$CHANGELOG_VERSION" = "$VERSION" ] || \
    fail "$DEBIAN_DIR/changelog starts with $CHANGELOG_VERSION, the binaries say $VERSION: add a changelog entry"
# The manual pages' date: the changelog's, so the same tree gives the same pages.
DATE=$(date -u -d "$(dpkg-parsechangelog -l "$DEBIAN_DIR/changelog" -S Date)" +%Y-%m-%d)
ARCH=$(dpkg --print-architecture)
DEB="$OUT/${PKG}_${VERSION}_${ARCH}.deb"
step "packaging $PKG $VERSION ($ARCH) from $BIN"

rm -rf "$WORK"
mkdir -p "$ROOT/DEBIAN"

# Binaries, stripped as dh_strip does.
strip_elf() { strip --strip-unneeded --remove-section=.comment --remove-section=.note "$1"; }
for tool in macro macro-local macrod; do
    install -D -m 755 "$BIN/$tool" "$ROOT/usr/bin/$tool"
    strip_elf "$ROOT/usr/bin/$tool"
done

# The Swift runtime and Foundation, once (linked statically into each binary, they would make
# the package 189 MiB installed; three copies of ICU's data alone would be 99 MiB). macro-local and macrod link them as
# shared libraries (RELEASE_FLAGS) and find them in /usr/lib/macroengine, a private folder (the
# toolchain's libraries have no stable ABI; no other package may use them), through the RUNPATH
# $ORIGIN/../lib/macroengine; in .build the toolchain's folder, which swiftc puts first in the
# RUNPATH, serves them. Which libraries: those the loader takes from the toolchain's runtime
# folder for the two binaries (ldd, so ICU's, which Foundation loads, too). macro links them
# statically (Package.swift: its start is most of `macro run`), so its RUNPATH goes.
LIBDIR=usr/lib/$PKG
RUNTIME_DIR=$("$SWIFT" -print-target-info | sed -n '/"runtimeLibraryPaths"/,/]/s|^ *"\(/[^"]*\)".*|\1|p' | head -1)
[ -d "$RUNTIME_DIR" ] || fail "swift -print-target-info gave no runtime library folder ($RUNTIME_DIR)"
runtime_libs=$(ldd "$BIN/macro-local" "$BIN/macrod" | awk -v dir="$RUNTIME_DIR/" 'index($3, dir) == 1 { print $3 }' | sort -u)
[ -n "$runtime_libs" ] || fail "macro-local and macrod load no library from $RUNTIME_DIR: RELEASE_FLAGS link the Swift runtime statically?"
ldd "$BIN/macro" | grep -q "$RUNTIME_DIR/" && fail "$BIN/macro loads the Swift runtime from $RUNTIME_DIR: it must link it statically (Package.swift)"
for lib in $runtime_libs; do
    install -D -m 644 "$lib" "$ROOT/$LIBDIR/$(basename "$lib")"
    strip_elf "$ROOT/$LIBDIR/$(basename "$lib")"
done
# chrpath rewrites the RUNPATH string in place (a shorter one), so nothing else in the file moves.
for tool in macro-local macrod; do chrpath -r "\$ORIGIN/../lib/$PKG" "$ROOT/usr/bin/$tool" >/dev/null; done
chrpath -d "$ROOT/usr/bin/macro"
for tool in macro macro-local macrod; do
    missing=$(ldd "$ROOT/usr/bin/$tool" | grep -E "not found|$RUNTIME_DIR/" || true)
    [ -z "$missing" ] || fail "$ROOT/usr/bin/$tool does not find its libraries in the package: $missing"
done
echo "    $LIBDIR: $(echo "$runtime_libs" | wc -l) libraries, $(du -k -s "$ROOT/$LIBDIR" | cut -f1) KiB"

# The systemd user unit: the repo's, with macrod from /usr/bin and the first start's setup.
unit=$ROOT/usr/lib/systemd/user/macrod.service
install -D -m 644 config/macrod.service "$unit"
sed -i \
    -e 's|^# systemd user unit for macrod\. Install with `make install-user`, then:|# systemd user unit for macrod, from the macroengine package. Enable it with:|' \
    -e 's|^Documentation=.*|Documentation=man:macrod(8) man:macro(1) file://%h/.config/macroengine/macroengine.yaml|' \
    -e 's|^ExecStart=%h/.local/bin/macrod |# First start: ~/.config/macroengine/macroengine.yaml and ~/.local/share/macroengine/macros\n# from the examples in /usr/share/macroengine (never overwrites a file).\nExecStartPre=/usr/libexec/macroengine/macrod-user-setup\nExecStart=/usr/bin/macrod |' \
    -e 's|the config `make \(install-user\)` installs says|the config macrod-user-setup writes says|' \
    "$unit"
grep -q '^ExecStart=/usr/bin/macrod ' "$unit" || fail "config/macrod.service: its ExecStart line changed; update $0"
grep -q '^ExecStartPre=/usr/libexec/macroengine/macrod-user-setup$' "$unit" || fail "the unit's ExecStartPre was not added"
install -D -m 755 "$DEBIAN_DIR/macrod-user-setup" "$ROOT/usr/libexec/macroengine/macrod-user-setup"

# The example config and macros, laid out as in the repo (the config's macros_dir is ../macros):
# the macros git tracks (packaging/macro-files.sh), not a scratch file lying in macros/.
install -D -m 644 config/macroengine.yaml "$ROOT/usr/share/macroengine/config/macroengine.yaml"
macro_files=$(packaging/macro-files.sh)
[ -n "$macro_files" ] || fail "packaging/macro-files.sh lists no macros"
while IFS= read -r f; do
    install -D -m 644 "$f" "$ROOT/usr/share/macroengine/$f"
done <<< "$macro_files"

# Shell completions, where each shell looks.
# (bash's is sourced, not run: no #! line.)
"$BIN/macro" --generate-completion-script bash | sed '1{/^#!/d}' > "$WORK/macro.bash"
"$BIN/macro" --generate-completion-script zsh > "$WORK/_macro"
"$BIN/macro" --generate-completion-script fish > "$WORK/macro.fish"
install -D -m 644 "$WORK/macro.bash" "$ROOT/usr/share/bash-completion/completions/macro"
install -D -m 644 "$WORK/_macro" "$ROOT/usr/share/zsh/vendor-completions/_macro"
install -D -m 644 "$WORK/macro.fish" "$ROOT/usr/share/fish/vendor_completions.d/macro.fish"

# Manual pages: swift-argument-parser's generate-manual, the tool its generate-manual plugin runs
# (`generate-manual BINARY --output-directory DIR`, which runs BINARY --experimental-dump-help).
# By default the tool is built beside the release binaries and run on them: the plugin
# (`swift package plugin generate-manual`, MANUAL=plugin) works offline too, but it builds the
# whole package in release mode without RELEASE_FLAGS (lld, the RUNPATH), which recompiles
# every module (5 min here) and relinks the release binaries without them, so the next `make
# release` compiles everything again (6 min). macrod in section 8; macro in section 1 with a page per subcommand
# (macro-run(1), ...: packaging/man-pages.sh); macro-local takes macro's command line, so its
# page is macro's.
MAN=$WORK/man
mkdir -p "$MAN/1" "$MAN/8"
step "man pages (swift-argument-parser's generate-manual${MANUAL:+, $MANUAL})"
if [ "${MANUAL:-}" = plugin ]; then
    PLUGIN_OUT=.build/plugins/GenerateManual/outputs
    for section in 8 1; do
        rm -rf "$PLUGIN_OUT"
        multi=(); [ "$section" = 1 ] && multi=(--multi-page)
        "$SWIFT" package plugin generate-manual --date "$DATE" --authors "MacroEngine maintainers" \
            --section "$section" "${multi[@]}" > "$WORK/generate-manual.log" 2>&1 || {
            cat "$WORK/generate-manual.log" >&2; fail "the generate-manual plugin failed"; }
        if [ "$section" = 8 ]; then cp "$PLUGIN_OUT/macrod/macrod.8" "$MAN/8/"; else cp "$PLUGIN_OUT"/macro/*.1 "$MAN/1/"; fi
    done
    echo "    note: the plugin relinked $BIN's binaries without RELEASE_FLAGS: make release rebuilds them"
else
    # `make deb` builds it beforehand, from make as `make release` does: SwiftPM plans a build
    # again when the environment differs (this script's shell has its own PWD, SHLVL, ...), and
    # a new plan relinks the EmbedWebAssets plugin's tool, here and then in the next make release.
    if [ ! -x "$BIN/generate-manual" ]; then
        "$SWIFT" build "${RELEASE[@]}" --product generate-manual > "$WORK/generate-manual.log" 2>&1 || {
            cat "$WORK/generate-manual.log" >&2; fail "building swift-argument-parser's generate-manual failed"; }
    fi
    "$BIN/generate-manual" "$ROOT/usr/bin/macrod" --section 8 --date "$DATE" \
        --authors "MacroEngine maintainers" --output-directory "$MAN/8"
    "$BIN/generate-manual" "$ROOT/usr/bin/macro" --section 1 --multi-page --date "$DATE" \
        --authors "MacroEngine maintainers" --output-directory "$MAN/1"
fi
[ -f "$MAN/8/macrod.8" ] && [ -f "$MAN/1/macro.1" ] && [ -f "$MAN/1/macro.run.1" ] || fail "generate-manual wrote no macrod.8, macro.1 or macro.run.1"
# macro-run.1 for `man macro run` (as git's pages), no macro.help.1, macrod(8) without
# subcommands and with ENVIRONMENT and FILES, paragraphs for man-db and lintian.
packaging/man-pages.sh "$MAN"
install -D -m 644 "$MAN/8/macrod.8" "$ROOT/usr/share/man/man8/macrod.8"
for page in "$MAN"/1/*.1; do
    install -D -m 644 "$page" "$ROOT/usr/share/man/man1/$(basename "$page")"
done
gzip -9n "$ROOT"/usr/share/man/man*/*
ln -s macro.1.gz "$ROOT/usr/share/man/man1/macro-local.1.gz"

# Documentation: copyright, changelog (a native package's), README and the reference.
doc=$ROOT/usr/share/doc/$PKG
install -D -m 644 "$DEBIAN_DIR/copyright" "$doc/copyright"
install -D -m 644 "$DEBIAN_DIR/changelog" "$doc/changelog"
gzip -9n "$doc/changelog"
install -D -m 644 README.md "$doc/README.md"
for f in docs/*; do install -D -m 644 "$f" "$doc/$f"; done
install -D -m 644 "$DEBIAN_DIR/lintian-overrides" "$ROOT/usr/share/lintian/overrides/$PKG"

# Depends: the shared libraries the binaries link (dpkg-shlibdeps reads their symbols files),
# JavaScriptCore at least at the version built against (the engine uses exported functions
# that have no public header), and what the binaries open as files: CodeMirror for the
# dashboard, acorn for the macro-file check.
step "Depends (dpkg-shlibdeps, dpkg-query)"
mkdir -p "$WORK/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$PKG" "$PKG" > "$WORK/debian/control"
# The private libraries are the package's own: dpkg-shlibdeps looks them up in the package (-l),
# and their own dependencies (libstdc++, glibc) count too.
shlibs=$(cd "$WORK" && dpkg-shlibdeps -O -l"root/$LIBDIR" root/usr/bin/macro root/usr/bin/macro-local root/usr/bin/macrod root/"$LIBDIR"/*.so)
shlibs=${shlibs#shlibs:Depends=}
# dpkg-shlibdeps goes by the symbols a binary takes, not by a version it needs without one:
# macro's packed relative relocations (DT_RELR, Package.swift) need the loader of glibc 2.36
# (GLIBC_ABI_DT_RELR), which dpkg-shlibdeps does not count.
relr=$(readelf -V "$ROOT"/usr/bin/macro "$ROOT"/usr/bin/macro-local "$ROOT"/usr/bin/macrod "$ROOT/$LIBDIR"/*.so | grep -c 'Name: GLIBC_ABI_DT_RELR' || true)
if [ "$relr" -gt 0 ]; then
    libc=$(echo "$shlibs" | sed -nE 's/.*libc6 \(>= ([^)]*)\).*/\1/p')
    [ -n "$libc" ] || fail "dpkg-shlibdeps gave no versioned libc6: $shlibs"
    if dpkg --compare-versions "$libc" lt 2.36; then shlibs=$(echo "$shlibs" | sed -E 's/libc6 \(>= [^)]*\)/libc6 (>= 2.36)/'); fi
fi
installed() {
    dpkg-query -W -f '${db:Status-Status} ${Version}\n' "$1" 2>/dev/null | awk '$1 == "installed" { print $2 }'
}
JSC_PKG=libjavascriptcoregtk-4.1-0
jsc=$(installed "$JSC_PKG"); [ -n "$jsc" ] || fail "$JSC_PKG is not installed: the release build needs it"
codemirror=$(installed libjs-codemirror); [ -n "$codemirror" ] || fail "libjs-codemirror is not installed (make codemirror-deps)"
acorn=$(installed node-acorn); [ -n "$acorn" ] || fail "node-acorn is not installed (make deps)"
echo "$shlibs" | grep -q "$JSC_PKG" || fail "dpkg-shlibdeps found no $JSC_PKG in macrod: $shlibs"
depends=$(echo "$shlibs" | sed -E "s/$JSC_PKG( \([^)]*\))?/$JSC_PKG (>= $jsc)/")
depends="$depends, libjs-codemirror (>= $codemirror), node-acorn (>= $acorn)"
echo "    Depends: $depends"

size=$(du -k -s "$ROOT" | cut -f1)
sed -e "s|@VERSION@|$VERSION|" -e "s|@ARCH@|$ARCH|" -e "s|@INSTALLED_SIZE@|$size|" \
    -e "s|@DEPENDS@|$depends|" "$DEBIAN_DIR/control.in" > "$ROOT/DEBIAN/control"
(cd "$ROOT" && find usr -type f -print0 | sort -z | xargs -0 md5sum) > "$ROOT/DEBIAN/md5sums"
# postrm: on purge, the users' links to the unit that `systemctl --user enable` made (its comment).
install -m 755 "$DEBIAN_DIR/postrm" "$ROOT/DEBIAN/postrm"
chmod 644 "$ROOT/DEBIAN/control" "$ROOT/DEBIAN/md5sums"
find "$ROOT" -type d -exec chmod 755 {} +

step "dpkg-deb --build"
rm -f "$OUT/${PKG}"_*.deb
dpkg-deb --root-owner-group --build "$ROOT" "$DEB" >/dev/null
ls -l "$DEB"

step "lintian"
# Every tag lintian still emits is overridden in packaging/debian/lintian-overrides with the
# reason; a new one fails the build (packaging/lint-deb.sh: as nobody when root).
packaging/lint-deb.sh "$DEB" || fail "lintian found the tags above"
echo "==> lintian: clean (overrides: packaging/debian/lintian-overrides)"
echo "built: $DEB ($(du -h "$DEB" | cut -f1), installed size $size KiB)"
