#!/usr/bin/env bash
# Finishes the manual pages swift-argument-parser's generate-manual wrote into DIR/1 (macro,
# --multi-page) and DIR/8 (macrod), for man-db and lintian (packaging/build-deb.sh runs it):
#
#   - a subcommand's page is macro-run.1, named macro-run, as git's are (git-commit.1), so that
#     `man macro run` finds it (man-db tries macro-run for two words); its SYNOPSIS keeps
#     "macro run" and its SEE ALSO names macro(1);
#   - swift-argument-parser's own `help` subcommand gets no page (macro.help.1, "Show subcommand
#     help information", says nothing `macro --help` does not), nor a line in macrod(8), whose
#     SYNOPSIS then claims no subcommand: macrod has none;
#   - macrod(8) gets ENVIRONMENT and FILES (packaging/macrod.8.sections) and SEE ALSO macro(1);
#   - blank lines (paragraphs of the help texts) become .Pp.
#
# Usage: packaging/man-pages.sh DIR
set -euo pipefail
[ $# = 1 ] && [ -f "$1/1/macro.1" ] && [ -f "$1/8/macrod.8" ] || { echo "usage: $0 DIR (with DIR/1/macro.1 and DIR/8/macrod.8)" >&2; exit 64; }
DIR=$1
SECTIONS=$(dirname "$0")/macrod.8.sections
fail() { echo "error: $*" >&2; exit 1; }
# before PAGE PATTERN TEXT: TEXT (lines) inserted before PAGE's line PATTERN (a whole line).
before() {
    grep -qxF "$2" "$1" || fail "$1 has no line $2; update $0"
    AT=$2 TEXT=$3 awk '$0 == ENVIRON["AT"] { print ENVIRON["TEXT"] } { print }' "$1" > "$1.new" && mv "$1.new" "$1"
}

rm -f "$DIR/1/macro.help.1"
sed -i -e 's/^$/.Pp/' "$DIR"/1/*.1 "$DIR/8/macrod.8"

# macro(1): its SEE ALSO names the subcommands' pages.
sed -i -e '/^\.Xr macro\.help 1/d' -e 's/^\.Xr macro\.\([a-z-]*\) 1/.Xr macro-\1 1/' "$DIR/1/macro.1"
for page in "$DIR"/1/macro.*.1; do
    [ "$page" = "$DIR/1/macro.1" ] && continue
    sub=$(basename "$page" .1); sub=${sub#macro.}
    [ "$sub" = "${sub//./}" ] || fail "$page: a subcommand of a subcommand; name its page"
    sed -i \
        -e "s/^\.Dt MACRO\.${sub^^} 1\$/.Dt MACRO-${sub^^} 1/" \
        -e "/^\.Sh NAME\$/,/^\.Sh /s/^\.Nm \"macro $sub\"\$/.Nm macro-$sub/" \
        -e "/^\.Sh SYNOPSIS\$/,/^\.Sh /s/^\.Nm\$/.Nm \"macro $sub\"/" "$page"
    grep -qx ".Nm macro-$sub" "$page" && grep -qx ".Dt MACRO-${sub^^} 1" "$page" || fail "$page: generate-manual's NAME or .Dt changed; update $0"
    before "$page" ".Sh AUTHORS" $'.Sh "SEE ALSO"\n.Xr macro 1'
    mv "$page" "$DIR/1/macro-$sub.1"
done

# macrod(8): no subcommands; ENVIRONMENT and FILES before EXIT STATUS.
page=$DIR/8/macrod.8
sed -i -e '/^\.Sh SYNOPSIS$/,/^\.Sh /{/^\.Ar subcommand$/d}' -e '/^\.It Em help$/,/^\.El$/d' "$page"
grep -q '^\.Ar subcommand$\|^\.It Em help$' "$page" && fail "$page still lists a subcommand"
before "$page" '.Sh "EXIT STATUS"' "$(cat "$SECTIONS")"
before "$page" ".Sh AUTHORS" $'.Sh "SEE ALSO"\n.Xr macro 1'
