#!/usr/bin/env python3
"""No function in src/ longer than MAX lines (80 unless given), from its `fn` line to the line
of its closing brace, test code included. Braces are matched on the code alone (comments,
strings and character literals blanked, as .ci/layers.py reads them); a function's nested
functions and closures count towards it. Generated code is not in src/ (build.rs writes the
gRPC code into OUT_DIR).

usage: .ci/fn_length.py [--max N] [SRC_DIR]
  exit 0: one summary line; exit 1: one line per function too long, longest first.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers import blanked  # noqa: E402  (the same reading of comments and strings)

FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def functions(code):
    """(name, first line, last line) of each function with a body in blanked `code`."""
    for m in FN.finditer(code):
        # The body: the first `{` after the signature, unless a `;` comes first (a declaration
        # in a trait or an `extern` block).
        j, depth = m.end(), 0
        while j < len(code):
            c = code[j]
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            if depth == 0 and c in ";{":
                break
            j += 1
        if j >= len(code) or code[j] == ";":
            continue
        open_at, depth = j, 0
        while j < len(code):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, j) + 1
        yield m.group(1), first, last, open_at


def main():
    args = sys.argv[1:]
    limit = 80
    if "--max" in args:
        k = args.index("--max")
        limit = int(args[k + 1])
        del args[k : k + 2]
    src = args[0] if args else "src"
    if not os.path.isdir(src):
        print(f"{src}: no such directory")
        return 2
    long, count = [], 0
    for root, _, names in sorted(os.walk(src)):
        for name in sorted(names):
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            code = blanked(open(path, encoding="utf-8").read())
            for fn, first, last, _ in functions(code):
                count += 1
                lines = last - first + 1
                if lines > limit:
                    long.append((lines, f"{path}:{first}", fn))
    for lines, where, fn in sorted(long, reverse=True):
        print(f"{lines} lines: {where} fn {fn} (at most {limit})")
    if long:
        return 1
    print(f"fn length: {count} functions in {src}, none over {limit} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
