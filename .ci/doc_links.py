#!/usr/bin/env python3
"""Every relative link in the documentation resolves.

Checks README.md, docs/*.md and benches/README.md (or the files given as arguments):

- a relative link (`[text](path)`, `![alt](path)`, `[label]: path`, `<a href>`, `<img src>`)
  names a file or directory that exists, relative to the linking file (a leading `/` means the
  repository root);
- an `#anchor`, alone or after a Markdown file, is the GitHub anchor of a heading of that file
  (or an explicit `<a name>`/`id`): lower case, punctuation other than `-` and `_` dropped, each
  space a `-`, and `-1`, `-2`, ... for repeated headings.

Links with a scheme (http, https, mailto, ...) are not fetched. Links inside code blocks and
code spans are not links. Prints each broken link as `file:line: target: reason` and exits 1 if
there is any.
"""
import re
import sys
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILES = ["README.md", "docs/*.md", "benches/README.md"]

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>\n]*>|\S+)", re.M)
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.I)
HTML_ANCHOR = re.compile(r"<[a-z][^>]*?\b(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def blank_fences(text):
    """The text with fenced code blocks blanked (line count kept)."""
    out, fence = [], None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append("")
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
                fence = None
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def blank_code_spans(text):
    """The text with code spans blanked (newlines kept). A span is a run of N backticks up to
    the next run of exactly N, within one paragraph; an unmatched run stays literal."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text[i] != "`":
            out.append(text[i])
            i += 1
            continue
        j = i
        while j < n and text[j] == "`":
            j += 1
        run = j - i
        k, end = j, None
        while k < n:
            if text.startswith("\n\n", k) or re.match(r"\n[ \t]*\n", text[k:k + 80]):
                break
            if text[k] == "`":
                m = k
                while m < n and text[m] == "`":
                    m += 1
                if m - k == run:
                    end = m
                    break
                k = m
            else:
                k += 1
        if end is None:
            out.append(text[i:j])
            i = j
        else:
            out.append("".join(c if c == "\n" else " " for c in text[i:end]))
            i = end
    return "".join(out)


def github_slug(heading):
    """GitHub's anchor for a heading's text (before de-duplication)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # punctuation (backticks, emphasis, ...) dropped
    return text.replace(" ", "-")


def anchors(path, cache={}):
    """The anchors a Markdown file defines: its headings' slugs and explicit HTML anchors."""
    if path not in cache:
        text = blank_fences(path.read_text(encoding="utf-8"))
        found, seen = set(), {}
        lines = text.split("\n")
        for i, line in enumerate(lines):
            heading = None
            m = ATX.match(line)
            if m:
                heading = m.group(2) or ""
            elif (
                i > 0
                and SETEXT.match(line)
                and lines[i - 1].strip()
                and not ATX.match(lines[i - 1])
                and not lines[i - 1].lstrip().startswith(("|", "-", "*", "+", ">"))
            ):
                heading = lines[i - 1]
            if heading is None:
                continue
            slug = github_slug(heading)
            if slug in seen:
                seen[slug] += 1
                found.add(f"{slug}-{seen[slug]}")
            else:
                seen[slug] = 0
                found.add(slug)
        found.update(HTML_ANCHOR.findall(text))
        cache[path] = found
    return cache[path]


def links(path):
    """(line, target) of every link in a Markdown file, code excluded."""
    text = blank_code_spans(blank_fences(path.read_text(encoding="utf-8")))
    found = []
    for pattern in (INLINE_LINK, REFERENCE_DEF, HTML_LINK):
        for m in pattern.finditer(text):
            target = m.group(1)
            if target.startswith("<") and target.endswith(">"):
                target = target[1:-1]
            found.append((text.count("\n", 0, m.start(1)) + 1, target))
    return sorted(found)


def check(path):
    problems = []
    for line, target in links(path):
        where = f"{path.relative_to(ROOT)}:{line}: {target}"
        if not target:
            problems.append(f"{where}: empty link")
            continue
        if SCHEME.match(target):
            continue  # http(s), mailto, ...: not fetched
        file_part, _, anchor = target.partition("#")
        file_part = unquote(file_part.split("?", 1)[0])
        if file_part.startswith("/"):
            dest = ROOT / file_part.lstrip("/")
        elif file_part:
            dest = path.parent / file_part
        else:
            dest = path
        dest = Path(*dest.parts)
        try:
            dest.resolve().relative_to(ROOT)
        except ValueError:
            problems.append(f"{where}: outside the repository")
            continue
        if not dest.exists():
            problems.append(f"{where}: no such file or directory")
            continue
        if anchor and dest.is_file() and dest.suffix.lower() in (".md", ".markdown"):
            if unquote(anchor) not in anchors(dest.resolve()):
                problems.append(f"{where}: no heading with anchor #{anchor} in {dest.resolve().relative_to(ROOT)}")
    return problems


def main(argv):
    patterns = argv or DEFAULT_FILES
    files = []
    for pattern in patterns:
        matched = sorted(ROOT.glob(pattern))
        if not matched:
            print(f"FAIL {pattern}: no such file")
            return 1
        files += [p for p in matched if p not in files]
    problems = [p for f in files for p in check(f)]
    for p in problems:
        print("FAIL", p)
    total = sum(len(links(f)) for f in files)
    print(f"{len(files)} files, {total} links: {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
