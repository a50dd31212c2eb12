#!/bin/sh
# The example macros `make deb` and `make install-user` ship: the files of macros/ that git
# tracks, one path a line relative to the checkout (macros/bump.js, macros/lib/rings.js, ...).
# A scratch file in macros/ that was never added (a while(true) test, say) is not shipped.
# Outside a git checkout (an exported tarball: its own folder is not a git work tree's top) the
# list is packaging/macro-files.txt, which Tests/Package/files-test.sh keeps equal to git's.
# A tracked file deleted in the work tree is left out.
set -eu
cd "$(dirname "$0")/.."
here=$(pwd -P)
if command -v git >/dev/null && top=$(git rev-parse --show-toplevel 2>/dev/null) && [ "$(cd "$top" && pwd -P)" = "$here" ]; then
    git -c core.quotePath=false ls-files -- macros/
else
    grep -v '^#' packaging/macro-files.txt
fi | while IFS= read -r file; do
    if [ -f "$file" ]; then printf '%s\n' "$file"; fi
done
