#!/usr/bin/env bash
# `make deb-test`: the Debian package as a user gets it. Installs the built
# macroengine_*.deb with apt-get on this machine, checks what it installed, runs
# `macrod --version`, starts the installed macrod (the unit's first-start setup in a
# temporary HOME, a temporary socket), runs macros through the installed /usr/bin/macro,
# checks the dashboard serves Debian's CodeMirror, shows `man macro`, purges the package
# and checks that nothing it installed is left. Needs root (sudo when not root).
#
# Usage: Tests/Package/deb-test.sh [PACKAGE.deb]   (default: the newest ./macroengine_*.deb)
# Refuses to run when macroengine is already installed (it would purge that installation).
set -uo pipefail
cd "$(dirname "$0")/../.."
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
APT=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -y -q)
DEB=${1:-$(ls -t ./macroengine_*.deb 2>/dev/null | head -1)}
[ -n "$DEB" ] && [ -f "$DEB" ] || { echo "error: no macroengine_*.deb here: run make deb first" >&2; exit 1; }
case "$DEB" in /*|./*) ;; *) DEB=./$DEB ;; esac

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok: $1"; }
bad() { failed=$((failed + 1)); echo "FAILED: $1"; [ $# -lt 2 ] || echo "$2" | sed 's/^/    /'; }
# check DESCRIPTION COMMAND...: passes when the command exits 0.
check() { local what=$1; shift; local out; if out=$("$@" 2>&1); then ok "$what"; else bad "$what" "$out"; fi; }
installed() { dpkg-query -W -f '${db:Status-Status}' macroengine 2>/dev/null | grep -qx installed; }

if installed; then
    echo "error: macroengine is already installed on this machine; this test installs and purges it." >&2
    echo "       Remove it first (apt-get purge macroengine), then run the test again." >&2
    exit 1
fi

TMP=$(mktemp -d /tmp/macroengine-deb-test.XXXXXX)
ORIG_HOME=$HOME
MACROD_PID=
cleanup() {
    [ -z "$MACROD_PID" ] || kill "$MACROD_PID" 2>/dev/null
    if installed; then $SUDO "${APT[@]}" purge macroengine >/dev/null 2>&1; fi
    rm -rf "$TMP"
}
trap cleanup EXIT

echo "==> apt-get install $DEB"
if $SUDO "${APT[@]}" install "$DEB" > "$TMP/install.log" 2>&1; then ok "apt-get install $DEB"; else
    bad "apt-get install $DEB" "$(tail -20 "$TMP/install.log")"; echo "deb-test: $passed passed, $failed failed"; exit 1; fi
VERSION=$(dpkg-query -W -f '${Version}' macroengine)
dpkg -L macroengine | sort > "$TMP/installed.txt"
# What the package put on the machine: its files and links, and the folders only it uses.
while read -r path; do [ -d "$path" ] && [ ! -L "$path" ] || echo "$path"; done < "$TMP/installed.txt" > "$TMP/files.txt"
grep -E '^/usr/(share|libexec|lib)/macroengine(/|$)|^/usr/share/doc/macroengine(/|$)' "$TMP/installed.txt" > "$TMP/own-dirs.txt"
echo "    $(wc -l < "$TMP/files.txt") files, Depends: $(dpkg-query -W -f '${Depends}' macroengine)"

for path in /usr/bin/macro /usr/bin/macro-local /usr/bin/macrod /usr/lib/systemd/user/macrod.service \
    /usr/libexec/macroengine/macrod-user-setup \
    /usr/lib/macroengine/libswiftCore.so /usr/lib/macroengine/libFoundation.so \
    /usr/share/bash-completion/completions/macro /usr/share/zsh/vendor-completions/_macro \
    /usr/share/fish/vendor_completions.d/macro.fish \
    /usr/share/man/man1/macro.1.gz /usr/share/man/man1/macro-run.1.gz /usr/share/man/man1/macro-local.1.gz \
    /usr/share/man/man8/macrod.8.gz /usr/share/doc/macroengine/copyright /usr/share/doc/macroengine/changelog.gz \
    /usr/share/macroengine/config/macroengine.yaml /usr/share/macroengine/macros/bump.js \
    /usr/share/macroengine/macros/lib/rings.js; do
    if grep -qx "$path" "$TMP/files.txt" && [ -e "$path" ]; then ok "installed $path"; else bad "installed $path" "not in dpkg -L macroengine, or missing"; fi
done

# The example macros: the ones git tracks (packaging/macro-files.sh), no scratch file of macros/.
shipped=$(cd /usr/share/macroengine && find macros -type f | sort)
if [ "$shipped" = "$(packaging/macro-files.sh | sort)" ]; then ok "/usr/share/macroengine/macros holds the tracked macros only"
else bad "/usr/share/macroengine/macros holds the tracked macros only" "$(diff <(packaging/macro-files.sh | sort) <(echo "$shipped"))"; fi

for tool in macrod macro macro-local; do
    out=$(/usr/bin/$tool --version 2>&1)
    if [ "$out" = "$VERSION" ]; then ok "$tool --version: $out"; else bad "$tool --version is the package's $VERSION" "$out"; fi
done
check "macro links no JavaScriptCore" sh -c '! ldd /usr/bin/macro | grep -q javascriptcoregtk'
# The Swift runtime and Foundation: macro-local and macrod from /usr/lib/macroengine, no other
# copy (the toolchain's is on this machine); macro has its own, statically (Package.swift).
# runtime_from TOOL: where the loader takes TOOL's Swift libraries from (ldd keeps the RUNPATH's
# /usr/bin/../lib/macroengine as it is: realpath), and "not found" lines.
runtime_from() {
    ldd "/usr/bin/$1" | awk '/not found/ { print; next } /libswift|Foundation/ { print $3 }' | while read -r lib; do
        case "$lib" in /*) realpath "$lib" ;; *) echo "$lib" ;; esac
    done | sort -u
}
for tool in macro-local macrod; do
    from=$(runtime_from "$tool")
    if echo "$from" | grep -qx /usr/lib/macroengine/libswiftCore.so && ! echo "$from" | grep -qv '^/usr/lib/macroengine/'; then
        ok "$tool loads the Swift runtime from /usr/lib/macroengine only"
    else bad "$tool loads the Swift runtime from /usr/lib/macroengine only" "$from"; fi
done
check "macro loads no Swift runtime library" sh -c '! ldd /usr/bin/macro | grep -E "libswift|Foundation"'

# The unit as systemd reads it, and its first start's setup in a temporary HOME.
HOME_DIR=$TMP/home RUNTIME=$TMP/run
mkdir -p "$HOME_DIR" && mkdir -m 700 "$RUNTIME"
check "systemd-analyze --user verify macrod.service" \
    env HOME="$HOME_DIR" XDG_RUNTIME_DIR="$RUNTIME" systemd-analyze --user verify --man=no /usr/lib/systemd/user/macrod.service
check "the unit runs /usr/bin/macrod after the first-start setup" sh -c \
    "grep -A1 -x 'ExecStartPre=/usr/libexec/macroengine/macrod-user-setup' /usr/lib/systemd/user/macrod.service | grep -qx 'ExecStart=/usr/bin/macrod --config %h/.config/macroengine/macroengine.yaml'"
check "macrod-user-setup writes the user's config and macros" env HOME="$HOME_DIR" /usr/libexec/macroengine/macrod-user-setup
CONFIG=$HOME_DIR/.config/macroengine/macroengine.yaml
check "the user's config names the user's macros" grep -qx "macros_dir: $HOME_DIR/.local/share/macroengine/macros" "$CONFIG"
check "the user's macros are the examples" cmp /usr/share/macroengine/macros/bump.js "$HOME_DIR/.local/share/macroengine/macros/bump.js"
echo "// edited" >> "$HOME_DIR/.local/share/macroengine/macros/bump.js"
rm "$CONFIG"
env HOME="$HOME_DIR" /usr/libexec/macroengine/macrod-user-setup >/dev/null
check "a second setup keeps the user's edited macro" grep -qx "// edited" "$HOME_DIR/.local/share/macroengine/macros/bump.js"

# The installed macrod, as the unit starts it (the user's config, found without --config),
# on a temporary socket.
SOCK=$RUNTIME/macroengine/macrod.sock
export HOME="$HOME_DIR" XDG_RUNTIME_DIR="$RUNTIME" XDG_STATE_HOME="$TMP/state" MACROENGINE_SOCKET= MACROENGINE_CONFIG=
/usr/bin/macrod > "$TMP/macrod.log" 2>&1 &
MACROD_PID=$!
for _ in $(seq 1 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
if [ -S "$SOCK" ]; then ok "macrod listens on $SOCK"; else bad "macrod listens on $SOCK" "$(cat "$TMP/macrod.log")"; fi
out=$(/usr/bin/macro run bump inner 2 --json 2>&1)
case "$out" in *'"result":2'*) ok "macro run bump inner 2 through macrod: $out";; *) bad "macro run bump inner 2 through macrod" "$out";; esac
out=$(/usr/bin/macro run animate outer 3 2>&1)
case "$out" in *outer*3*) ok "macro run animate (async, lib/rings.js) through macrod";; *) bad "macro run animate through macrod" "$out";; esac
out=$(/usr/bin/macro status 2>&1)
case "$out" in *"$VERSION"*) ok "macro status names macrod $VERSION";; *) bad "macro status names macrod $VERSION" "$out";; esac
out=$(/usr/bin/macro run bump inner 1 --local --json 2>&1)
case "$out" in *'"result"'*) ok "macro run --local (macro-local in-process): $out";; *) bad "macro run --local" "$out";; esac
# The dashboard (the user's config turns it on at 127.0.0.1:0): `macro dashboard` prints a
# one-time code's URL, which trades for the token as the page does, and the page's editor is
# Debian's CodeMirror.
URL=$(/usr/bin/macro dashboard --no-open 2>&1)
check "the dashboard (${URL%%\?*}) trades its one-time code and serves CodeMirror from libjs-codemirror" python3 - "$URL" <<'EOF'
import json, sys, urllib.request
url = sys.argv[1]
base, code = url.split("?code=")
origin = base.rstrip("/")
trade = urllib.request.Request(base + "session", data=json.dumps({"code": code}).encode(), method="POST",
                               headers={"Content-Type": "application/json", "Origin": origin})
token = json.loads(urllib.request.urlopen(trade, timeout=10).read())["token"]
assert len(token) == 64, token
body = urllib.request.urlopen(base + "codemirror/lib/codemirror.js", timeout=10).read()
assert b"CodeMirror" in body, body[:200]
EOF
kill -TERM "$MACROD_PID"; wait "$MACROD_PID"; status=$?; MACROD_PID=
if [ "$status" = 0 ]; then ok "macrod stops on SIGTERM with 0"; else bad "macrod stops on SIGTERM with 0" "exit $status; $(tail -5 "$TMP/macrod.log")"; fi
unset XDG_RUNTIME_DIR XDG_STATE_HOME
export HOME="$ORIG_HOME"

# The manual.
out=$(MANPAGER=cat MANWIDTH=80 man macro 2>&1)
if echo "$out" | grep -q "macro run" && echo "$out" | grep -q "SYNOPSIS"; then
    ok "man macro"; echo "$out" | sed -n '1,30p' | sed 's/^/    | /'
else bad "man macro" "$out"; fi
check "man 8 macrod" sh -c 'man -P cat 8 macrod 2>&1 | grep -q -- "--socket"'
check "man macro run (macro-run.1, as git's pages)" sh -c 'man -P cat macro run 2>&1 | grep -q -i "run a macro"'
check "no macro.help(1)" sh -c '! ls /usr/share/man/man1/ | grep -q "^macro[.-]help\."'
check "macrod(8) has ENVIRONMENT and FILES, names the user's config, claims no subcommand" sh -c \
    'out=$(MANWIDTH=200 man -P cat 8 macrod 2>&1); for s in ENVIRONMENT FILES "~/.config/macroengine/macroengine.yaml"; do echo "$out" | grep -qF "$s" || exit 1; done; ! echo "$out" | grep -qi subcommand'

# `systemctl --user enable macrod` (here by hand: no user bus needed) links the unit into the
# user's default.target.wants; the purge removes that link, which would dangle, and keeps a
# link of the same name to another file (a unit `make install-user` installed).
USER_UNITS=$(getent passwd "$(id -un)" | cut -d: -f6)/.config/systemd/user
ENABLED=$USER_UNITS/default.target.wants/macrod.service OTHER=$USER_UNITS/macroengine-deb-test.target.wants/macrod.service
if [ -e "$ENABLED" ] || [ -L "$ENABLED" ]; then
    echo "skip: the purge's unlinking of $ENABLED (it exists already)"; ENABLED=
else
    # The folders this makes are removed afterwards when they are empty again.
    made=$(d=$USER_UNITS; while [ ! -d "$d" ]; do echo "$d"; d=$(dirname "$d"); done)
    mkdir -p "$(dirname "$ENABLED")" "$(dirname "$OTHER")"
    ln -s /usr/lib/systemd/user/macrod.service "$ENABLED"
    ln -s "$USER_UNITS/macrod.service" "$OTHER"
fi

# Purge, then nothing the package installed is left.
echo "==> apt-get purge macroengine"
check "apt-get purge macroengine" $SUDO "${APT[@]}" purge macroengine
if [ -n "$ENABLED" ]; then
    if [ ! -L "$ENABLED" ] && [ -L "$OTHER" ]; then ok "the purge removed $ENABLED, kept a link to another unit"
    else bad "the purge removed $ENABLED, kept a link to another unit" "$(ls -l "$ENABLED" "$OTHER" 2>&1)"; fi
    rm -f "$OTHER"; rmdir "$(dirname "$OTHER")" 2>/dev/null
    for d in $made; do rmdir "$d" 2>/dev/null; done
fi
if installed; then bad "macroengine is no longer installed"; else ok "macroengine is no longer installed"; fi
left=$(while read -r path; do [ -e "$path" ] || [ -L "$path" ] && echo "$path"; done < "$TMP/files.txt")
left_dirs=$(while read -r path; do [ -e "$path" ] && echo "$path"; done < "$TMP/own-dirs.txt")
if [ -z "$left$left_dirs" ]; then ok "none of the $(wc -l < "$TMP/files.txt") installed files, nor its folders, is left"
else bad "nothing the package installed is left" "$left$left_dirs"; fi

echo "deb-test: $passed passed, $failed failed"
[ "$failed" = 0 ]
