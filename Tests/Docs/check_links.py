#!/usr/bin/env python3
"""Checks that every relative link and #anchor in README.md and docs/*.md resolves.

A link is `[text](target)` or `![alt](target)` outside code (fenced blocks and `code spans`).
Links to other sites (http:, https:, mailto:) are not followed. A relative target must name an
existing file or directory (relative to the Markdown file that links it); an `#anchor` must be
the GitHub slug of a heading of the target Markdown file (or of the same file for `#anchor`):
lower case, punctuation other than `-` and `_` removed, spaces as `-`, `-1`, `-2` ... for repeats.

Usage: check_links.py [REPO_ROOT]. Prints each broken link, then `links: N passed, M failed`;
exits 1 when any failed.
"""
import pathlib
import re
import sys
import urllib.parse

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text):
    """The lines outside fenced code blocks, with their numbers, code spans blanked."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
                continue
            if stripped.startswith(fence):
                fence = None
                continue
        if fence is not None:
            continue
        yield number, re.sub(r"(`+)(.+?)\1", lambda m: " " * len(m.group(0)), line)


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = re.sub(r"<[^>]+>", "", text)                          # inline HTML
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)                         # keep letters, digits, _, -, space
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, result = {}, set()
        fence = None
        for line in path.read_text(encoding="utf-8").split("\n"):
            stripped = line.lstrip()
            marker = re.match(r"(`{3,}|~{3,})", stripped)
            if marker:
                if fence is None:
                    fence = marker.group(1)
                elif stripped.startswith(fence):
                    fence = None
                continue
            if fence is not None:
                continue
            match = HEADING.match(line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            result.add(base if count == 0 else f"{base}-{count}")
        result.update(re.findall(r'<a\s+(?:name|id)="([^"]+)"', path.read_text(encoding="utf-8")))
        cache[path] = result
    return cache[path]


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    files = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    passed, failures = 0, []
    for source in files:
        for number, line in prose_lines(source.read_text(encoding="utf-8")):
            for match in LINK.finditer(line):
                target = match.group(1)
                where = f"{source.relative_to(root)}:{number}: {target}"
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
                    continue
                path_part, _, anchor = target.partition("#")
                path_part = urllib.parse.unquote(path_part)
                resolved = (source.parent / path_part).resolve() if path_part else source
                if not resolved.exists():
                    failures.append(f"{where}: no such file {resolved.relative_to(root) if resolved.is_relative_to(root) else resolved}")
                    continue
                if anchor:
                    if resolved.suffix != ".md":
                        failures.append(f"{where}: an anchor into a file that is not Markdown")
                        continue
                    if urllib.parse.unquote(anchor) not in anchors(resolved):
                        failures.append(f"{where}: no heading with the anchor #{anchor} in {resolved.relative_to(root)}")
                        continue
                passed += 1
    for failure in failures:
        print(f"broken link: {failure}")
    print(f"links: {passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
