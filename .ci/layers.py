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
    ["route"],  # routes as names
    ["config"],  # typed, layered settings
    ["telemetry"],  # logging, access and audit lines, request ids
    ["error"],  # the domain error and its codes
    ["metrics"],  # the Prometheus series
    ["callers"],  # who asks, what they may ask, how much
    ["service"],  # typed request -> output
    ["state", "memory"],  # the shared handle; heap trimming
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
PATH = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")
TEST_BLOCK = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def strip_test_blocks(text):
    """The text without its `#[cfg(test)] mod x { ... }` blocks (braces counted, strings and
    comments skipped)."""
    out, i = [], 0
    while True:
        m = TEST_BLOCK.search(text, i)
        if not m:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            c = text[j]
            if text.startswith("//", j):
                j = text.find("\n", j)
                j = len(text) if j < 0 else j
                continue
            if c == '"':
                j += 1
                while j < len(text) and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
            elif text.startswith("r#\"", j):
                end = text.find('"#', j + 3)
                j = len(text) if end < 0 else end + 1
            elif c == "'" and j + 2 < len(text) and (text[j + 2] == "'" or text[j + 1] == "\\"):
                j = text.find("'", j + 2)
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            j += 1
        i = j


def edges(src):
    found = {}
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs") or name == "tests.rs":
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            top = rel.split(os.sep)[0].removesuffix(".rs")
            if top in ("main", "lib"):
                continue
            text = strip_test_blocks(open(path, encoding="utf-8").read())
            for number, line in enumerate(text.splitlines(), 1):
                for m in PATH.finditer(line):
                    if m.group(1) != top:
                        found.setdefault((top, m.group(1)), []).append(f"{rel}:{number}")
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
