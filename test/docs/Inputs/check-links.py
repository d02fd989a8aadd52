"""Checks that every relative link of the given Markdown files resolves.

Usage: check-links.py ROOT FILE_OR_FOLDER...

A folder stands for the *.md files under it. Links are `[text](target)`
outside code spans and fenced blocks; a target with a scheme (https:,
mailto:) or only a fragment (#...) is skipped, and a fragment is dropped
from the others. Each target must name a file or folder that exists,
relative to the linking file. Prints each broken link as FILE:LINE: target
and exits 1 if there is any.
"""
import os
import re
import sys

LINK = re.compile(r"\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+).*?\1")


def markdown_files(paths):
    for path in paths:
        if os.path.isdir(path):
            for folder, _, names in sorted(os.walk(path)):
                yield from (os.path.join(folder, n) for n in sorted(names) if n.endswith(".md"))
        else:
            yield path


def relative_links(path):
    """Yields (line, target, whether it exists) of each relative link."""
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            for target in LINK.findall(CODE_SPAN.sub("", line)):
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
                    continue
                resolved = os.path.join(os.path.dirname(path), target.split("#", 1)[0])
                yield number, target, os.path.exists(resolved)


def main():
    root, paths = sys.argv[1], sys.argv[2:]
    checked = links = broken = 0
    for path in markdown_files(os.path.join(root, p) for p in paths):
        checked += 1
        for number, target, exists in relative_links(path):
            links += 1
            if not exists:
                print(f"{os.path.relpath(path, root)}:{number}: {target}")
                broken += 1
    if checked == 0:
        sys.exit("no Markdown files")
    print(f"{checked} files, {links} relative links, {broken} broken")
    sys.exit(1 if broken else 0)


main()
