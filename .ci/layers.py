#!/usr/bin/env python3
"""Holds the module graph of src/ to one direction: every `crate::<module>` path (in `use`
lines, inline paths and doc links alike) must point to a module of the same layer or a lower
one, and the top-level modules must form no cycle. Test-only code (`#[cfg(test)] mod ... { }`
blocks and `tests.rs` files) is skipped: a test may reach up.

The layers, lowest first. A new top-level module must be given its layer here.

usage: .ci/layers.py [SRC_DIR]   -> exit 1, one line per upward path or cycle
"""
import os
import re
import sys

LAYERS = [
    ["drbg"],  # the generators: no I/O but the OS entropy source
    ["beacon"],  # the drand-compatible beacon: BLS rounds by the clock (no I/O, no HTTP)
    ["route"],  # routes as names
    ["config"],  # typed, layered settings
    ["telemetry"],  # logging, access and audit lines, request ids
    ["error"],  # the domain error and its codes
    ["metrics"],  # the Prometheus series
    ["callers"],  # who asks, what they may ask, how much
    ["service"],  # typed request -> output
    ["receipts"],  # signed receipts of output: keys, canonical JSON, signatures
    ["state", "memory", "vmgenid"],  # the shared handle; heap trimming; VM generation listener
    ["http"],  # the call pipeline, endpoints, REST
    ["grpc"],  # the gRPC adapter (uses the pipeline's records)
    ["admin"],  # the admin port's routes
    ["reload", "tls"],  # reloading files; TLS (reloadable)
    ["server"],  # the network layer: listeners, connections, deadlines, shutdown phases
    ["shutdown"],  # signals
    ["app"],  # wiring
    ["cli"],  # the command line
]
LAYER = {m: i for i, layer in enumerate(LAYERS) for m in layer}
PATH = re.compile(r"\bcrate::(?:([a-z_][a-z0-9_]*)|\{)")
TEST_ITEM = re.compile(
    r"#\[cfg\(test\)\](?:\s*#\[[^\]]*\])*\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*([{;])"
)
IDENT = re.compile(r"[A-Za-z0-9_]")


def blanked(text):
    """`text` with its comments, strings and character literals replaced by spaces (newlines
    kept), so that braces and attributes can be matched on what is code."""
    out, i, n = list(text), 0, len(text)

    def blank(start, end):
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif (m := re.match(r'b?r(#*)"', text[i:])) and (i == 0 or not IDENT.match(text[i - 1])):
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            j = n if end < 0 else end + 1 + len(m.group(1))
            blank(i, j)
            i = j
        elif text[i] == '"' or text.startswith('b"', i) and (i == 0 or not IDENT.match(text[i - 1])):
            j = i + (2 if text[i] == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif m := re.match(r"b?'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'", text[i:]):
            blank(i, i + len(m.group(0)))
            i += len(m.group(0))
        else:
            i += 1
    return "".join(out)


def without_tests(text):
    """The text without its `#[cfg(test)] mod x { ... }` blocks (line numbers kept), and the
    names of `#[cfg(test)] mod x;` modules (files of their own)."""
    code = blanked(text)
    spans, test_files = [], set()
    for m in TEST_ITEM.finditer(code):
        if m.group(2) == ";":
            test_files.add(m.group(1))
            continue
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        spans.append((m.start(), j))
    out, last = [], 0
    for start, end in spans:
        out.append(text[last:start])
        out.append("\n" * text.count("\n", start, end))
        last = end
    out.append(text[last:])
    return "".join(out), test_files


def paths(line):
    """The top-level modules a line names with `crate::`, groups (`crate::{a::X, b}`) too."""
    for m in PATH.finditer(line):
        if m.group(1):
            yield m.group(1)
            continue
        depth, j, item = 1, m.end(), ""
        while j < len(line) and depth:
            c = line[j]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            if depth == 1 and c == ",":
                yield from re.findall(r"^\s*([a-z_][a-z0-9_]*)", item)
                item = ""
            elif depth >= 1:
                item += c
            j += 1
        yield from re.findall(r"^\s*([a-z_][a-z0-9_]*)", item)


def edges(src):
    found, skipped = {}, set()
    files = []
    for root, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                files.append(os.path.join(root, name))
    texts = {}
    for path in sorted(files):
        text, test_files = without_tests(open(path, encoding="utf-8").read())
        texts[path] = text
        base = os.path.splitext(path)[0] if os.path.basename(path) not in ("lib.rs", "main.rs", "mod.rs") else os.path.dirname(path)
        for name in test_files:
            skipped.add(os.path.join(base, name + ".rs"))
            skipped.add(os.path.join(base, name, "mod.rs"))
    for path in sorted(files):
        rel = os.path.relpath(path, src)
        top = rel.split(os.sep)[0].removesuffix(".rs")
        if top in ("main", "lib") or path in skipped or os.path.basename(path) == "tests.rs":
            continue
        for number, line in enumerate(texts[path].splitlines(), 1):
            for module in paths(line):
                if module != top:
                    found.setdefault((top, module), []).append(f"{rel}:{number}")
    return found


def cycles(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "src"
    found = edges(src)
    problems = []
    modules = {a for a, _ in found} | {b for _, b in found}
    for m in sorted(modules - set(LAYER)):
        problems.append(f"module {m} has no layer: add it to LAYERS in .ci/layers.py")
    for (a, b), where in sorted(found.items()):
        if a in LAYER and b in LAYER and LAYER[b] > LAYER[a]:
            problems.append(f"upward: {a} (layer {LAYER[a]}) -> {b} (layer {LAYER[b]}) at {', '.join(where)}")
    graph = {}
    for a, b in found:
        graph.setdefault(a, set()).add(b)
    for c in cycles(graph):
        problems.append("cycle: " + " <-> ".join(c))
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"layers: {len(found)} module edges among {len(modules)} modules, all downward, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
