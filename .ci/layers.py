#!/usr/bin/env python3
"""Holds the module graph of src/ to one direction, between files as well as between top-level
modules, reading nothing outside the repository:

- between files: no import circle. A file depends on another when it names that file's module:
  a `crate::`, `super::` or `self::` path (in a `use`, or inline in the code), or a path that
  starts with a child module of the file (`mod x;` then `x::Y`) or with a name a `use` of the
  file brought in (`use super::policy;` then `policy::Route`). A path names the deepest module
  of it that is a file of its own: `crate::callers::quota::Rate` is quota.rs, `super::Caller`
  from callers/registry.rs is callers.rs (a parent's `pub use` re-export counts as the
  parent's: callers.rs then depends on the file it re-exports from). Declaring a module
  (`mod x;`) is not a dependency.
- between top-level modules: every dependency points to a module of the same layer or a lower
  one (LAYERS below), and they form no cycle.

Test-only code does not count (a test may reach up): `#[cfg(test)]` items (`mod tests { }`
blocks, `#[cfg(test)] mod tests;` files and their own modules, `#[cfg(test)]` functions and
imports). Neither do comments (so doc links) and strings. The crate is read from src/lib.rs
down its `mod` declarations: a declared module without a file is an error, not a pass, and so
is a file of src/ that no declaration reaches (it would not be checked).

usage: .ci/layers.py [--edges] [SRC_DIR]
  --edges: also print every dependency inside each cycle found (what to cut).
  exit 0: one summary line; exit 1: one line per problem, each cycle printed as a path of
  files with the line of each step.
"""
import os
import re
import sys

LAYERS = [
    ["drbg"],  # the generators: no I/O but the OS entropy source
    ["peer_key"],  # a peer as per-peer limits count it (callers' limits, the beacon's waiters)
    ["secret_file"],  # reading a file that holds a secret: one open file, its mode, wiped text
    ["beacon"],  # the drand-compatible beacon: BLS rounds by the clock (no I/O, no HTTP)
    ["route"],  # routes as names
    ["config"],  # typed, layered settings
    ["tls_client"],  # TLS as drbgd's clients speak it (roots, provider)
    ["telemetry"],  # logging, access and audit lines, request ids
    ["error"],  # the domain error and its codes
    ["metrics"],  # the Prometheus series
    ["callers"],  # who asks, what they may ask, how much
    ["service"],  # typed request -> output
    ["receipts"],  # signed receipts of output: keys, canonical JSON, signatures
    ["tickets"],  # single-use tickets and the results kept for them (SQLite, PostgreSQL)
    ["randomorg"],  # RANDOM.ORG's API's domain: methods, parameters, values, RSA signatures
    ["state", "memory", "vmgenid"],  # the shared handle; heap trimming; VM generation listener
    ["pipeline"],  # the call pipeline both transports share (reads the endpoints through a trait)
    ["http"],  # the registry's rows, endpoints, REST, the drop-in front-ends
    ["grpc"],  # the gRPC adapter (uses the pipeline's records)
    ["admin"],  # the admin port's routes
    ["reload", "tls"],  # reloading files; TLS (reloadable)
    ["server"],  # the network layer: listeners, connections, deadlines, shutdown phases
    ["shutdown"],  # signals
    ["app"],  # wiring
    ["cli"],  # the command line
]
LAYER = {m: i for i, layer in enumerate(LAYERS) for m in layer}
# Crate roots that are not modules of the library: the binary's main.rs calls the library
# through its public name (`drbgd::`), never through `crate::`.
OTHER_ROOTS = ("main.rs",)

IDENT = re.compile(r"[A-Za-z0-9_]")
CFG_TEST = re.compile(r"#\[cfg\(\s*test\s*\)\]")
MOD_DECL = re.compile(r"\b(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*([;{])")
USE = re.compile(r"(?<![A-Za-z0-9_$])use\s+")
PUB_IN = re.compile(r"\bpub\s*\(\s*in\s+[^)]*\)")
# A path of two segments or more: `crate::a::b`, `super::super::x`, `name::Item`.
PATH = re.compile(r"(?<![A-Za-z0-9_:$])(\$?[A-Za-z_][A-Za-z0-9_]*)((?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)+)")


def blanked(text):
    """`text` with its comments, strings and character literals replaced by spaces (newlines
    kept), so that braces, attributes and paths can be matched on what is code."""
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
        elif (m := re.match(r'b?r(#*)"', text[i:i + 300])) and (i == 0 or not IDENT.match(text[i - 1])):
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
        elif m := re.match(r"b?'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'", text[i:i + 16]):
            blank(i, i + len(m.group(0)))
            i += len(m.group(0))
        else:
            i += 1
    return "".join(out)


def item_end(code, start):
    """Where the item starting at `start` ends: after its first `;` outside brackets, or after
    the `}` that closes its first block."""
    depth, j, n = 0, start, len(code)
    while j < n:
        c = code[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0 and c == "}":
                return j + 1
        elif c == ";" and depth == 0:
            return j + 1
        j += 1
    return n


def without_tests(code):
    """Blanked `code` without its `#[cfg(test)]` items (line breaks kept), and the names of the
    `#[cfg(test)] mod x;` modules (files of their own, skipped with their descendants)."""
    out, test_files, last = [], set(), 0
    for m in CFG_TEST.finditer(code):
        if m.start() < last:
            continue
        # Further attributes, then the item.
        j = m.end()
        while True:
            a = re.match(r"\s*#\[", code[j:])
            if not a:
                break
            j = item_end(code, j + a.end() - 1)
        decl = re.match(r"\s*(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;", code[j:])
        if decl:
            test_files.add(decl.group(1))
        end = item_end(code, j)
        out.append(code[last:m.start()])
        out.append(re.sub(r"[^\n]", " ", code[m.start():end]))
        last = end
    out.append(code[last:])
    return "".join(out), test_files


def use_trees(code):
    """Each `use` declaration of `code`: (offset, [(segments, alias)]), groups expanded
    (`a::{b, c::{self, d as e}}` is a::b, a::c (alias c), a::c::d (alias e)); a glob's
    segments end before the `*`."""
    for m in USE.finditer(code):
        end = code.find(";", m.end())
        if end < 0:
            continue
        tokens = re.findall(r"::|[{},*]|\$?[A-Za-z_][A-Za-z0-9_]*", code[m.end():end])
        yield m.start(), end, list(expand(tokens))


def expand(tokens):
    """The paths of one use tree's tokens."""
    pos = 0

    def tree(prefix):
        nonlocal pos
        segs = list(prefix)
        while pos < len(tokens):
            t = tokens[pos]
            if t == "::":
                pos += 1
            elif t == "{":
                pos += 1
                while pos < len(tokens) and tokens[pos] != "}":
                    if tokens[pos] == ",":
                        pos += 1
                        continue
                    yield from tree(segs)
                pos += 1
                return
            elif t == "*":
                pos += 1
                yield segs, None
                return
            elif t in (",", "}"):
                break
            elif t == "as":
                pos += 1
                alias = tokens[pos] if pos < len(tokens) else None
                pos += 1
                yield segs, alias
                return
            elif t == "self" and segs:
                pos += 1
            else:
                segs = segs + [t]
                pos += 1
        if segs:
            yield segs, segs[-1]

    yield from tree([])


class Crate:
    """The library's modules, read from src/lib.rs down its `mod` declarations."""

    def __init__(self, src):
        self.src = src
        self.files = {}  # module path (tuple) -> file path
        self.code = {}  # file path -> blanked code without test items
        self.children = {}  # file path -> child module names declared in it (files and inline)
        self.test_children = {}  # file path -> its `#[cfg(test)] mod x;` names
        self.problems = []
        root = os.path.join(src, "lib.rs")
        if not os.path.isfile(root):
            self.problems.append(f"{root}: no such file (the crate root this check starts from)")
            return
        self.read((), root)

    def read(self, module, path):
        self.files[module] = path
        code, test_files = without_tests(blanked(open(path, encoding="utf-8").read()))
        code = PUB_IN.sub(lambda m: " " * len(m.group(0)), code)
        self.code[path] = code
        names = set()
        here = os.path.dirname(path) if os.path.basename(path) in ("lib.rs", "mod.rs") else path[:-3]
        for m in MOD_DECL.finditer(code):
            name, kind = m.group(1), m.group(2)
            names.add(name)
            if kind == "{" or name in test_files:
                continue
            candidates = [os.path.join(here, name + ".rs"), os.path.join(here, name, "mod.rs")]
            found = [c for c in candidates if os.path.isfile(c)]
            if not found:
                line = code.count("\n", 0, m.start()) + 1
                self.problems.append(
                    f"{path}:{line}: `mod {name};` has no file ({' or '.join(candidates)})"
                )
                continue
            self.read(module + (name,), found[0])
        self.children[path] = names | test_files
        self.test_children[path] = test_files

    def file_of(self, segments):
        """The file of the deepest module `segments` (an absolute path) names, if any."""
        for k in range(len(segments), -1, -1):
            if tuple(segments[:k]) in self.files:
                return self.files[tuple(segments[:k])]
        return None

    def unread(self):
        """Files of src/ that no `mod` declaration reaches (test files aside)."""
        seen = set(self.files.values())
        tests = set()
        for module, path in self.files.items():
            here = os.path.dirname(path) if os.path.basename(path) in ("lib.rs", "mod.rs") else path[:-3]
            for name in self.test_children.get(path, ()):
                tests.add(os.path.join(here, name + ".rs"))
                tests.add(os.path.join(here, name))
        for root, _, names in os.walk(self.src):
            for name in names:
                path = os.path.join(root, name)
                if not name.endswith(".rs") or path in seen:
                    continue
                if os.path.relpath(path, self.src) in OTHER_ROOTS:
                    continue
                # Inside a test module's tree (`#[cfg(test)] mod tests;` and its children).
                if any(path == t or path.startswith(t + os.sep) or path[:-3] == t for t in tests):
                    continue
                yield path


def absolute(segments, module, children, aliases):
    """`segments` as an absolute module path, seen from `module`; None for a path outside the
    crate (another crate, `std`, a local item)."""
    first = segments[0]
    if first in ("crate", "$crate"):
        return segments[1:]
    if first in ("super", "self"):
        base = list(module)
        rest = segments
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                if not base:
                    return None
                base.pop()
            rest = rest[1:]
        return base + rest
    if first in aliases:
        return aliases[first] + segments[1:]
    if first in children:
        return list(module) + segments
    return None


def dependencies(crate):
    """{(file, file): [line, ...]} for every dependency between two files."""
    found = {}
    for module, path in crate.files.items():
        code = crate.code[path]
        children = crate.children.get(path, set())
        aliases = {}

        def add(segments, offset):
            target = crate.file_of(segments)
            if target and target != path:
                line = code.count("\n", 0, offset) + 1
                found.setdefault((path, target), []).append(line)

        masked = list(code)
        for start, end, trees in use_trees(code):
            for segments, alias in trees:
                if not segments:
                    continue
                full = absolute(segments, module, children, aliases)
                if full is None:
                    continue
                add(full, start)
                if alias and alias != "_":
                    aliases[alias] = full
            for k in range(start, end):
                if masked[k] != "\n":
                    masked[k] = " "
        rest = "".join(masked)
        for m in PATH.finditer(rest):
            segments = [m.group(1)] + re.findall(r"[A-Za-z_][A-Za-z0-9_]*", m.group(2))
            full = absolute(segments, module, children, aliases)
            if full is not None:
                add(full, m.start())
    return found


def strongly_connected(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def shortest_cycle(graph, members):
    """A shortest cycle through the first of `members` within them: [a, b, ..., a]."""
    start, inside = members[0], set(members)
    previous, frontier = {start: None}, [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w == start:
                    path = [v]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    return path[::-1] + [start]
                if w in inside and w not in previous:
                    previous[w] = v
                    following.append(w)
        frontier = following
    return members + [start]


def describe(cycle, where, src):
    steps = []
    for a, b in zip(cycle, cycle[1:]):
        lines = ",".join(str(n) for n in sorted(set(where[(a, b)]))[:4])
        steps.append(f"{os.path.relpath(a, src)}:{lines}")
    return " -> ".join(steps + [os.path.relpath(cycle[-1], src)])


def top(path, src):
    rel = os.path.relpath(path, src)
    return rel.split(os.sep)[0].removesuffix(".rs")


def main():
    args = sys.argv[1:]
    show_edges = "--edges" in args
    args = [a for a in args if a != "--edges"]
    src = args[0] if args else "src"
    crate = Crate(src)
    problems = list(crate.problems)
    if not crate.files:
        for p in problems:
            print(p)
        return 1
    for path in sorted(crate.unread()):
        problems.append(f"{path}: no `mod` declaration reaches this file, so nothing checks it")
    found = dependencies(crate)

    # Top-level modules: layers and cycles.
    modules = {}
    for (a, b), lines in found.items():
        ta, tb = top(a, src), top(b, src)
        if ta != tb and "lib" not in (ta, tb):
            modules.setdefault((ta, tb), []).extend(f"{os.path.relpath(a, src)}:{n}" for n in lines)
    names = {a for a, _ in modules} | {b for _, b in modules}
    for m in sorted(names - set(LAYER)):
        problems.append(f"module {m} has no layer: add it to LAYERS in .ci/layers.py")
    for (a, b), where in sorted(modules.items()):
        if a in LAYER and b in LAYER and LAYER[b] > LAYER[a]:
            problems.append(f"upward: {a} (layer {LAYER[a]}) -> {b} (layer {LAYER[b]}) at {', '.join(where[:6])}")
    module_graph = {}
    for a, b in modules:
        module_graph.setdefault(a, set()).add(b)
    for comp in strongly_connected(module_graph):
        cycle = shortest_cycle(module_graph, comp)
        problems.append("module cycle: " + " -> ".join(cycle))

    # Files.
    file_graph = {}
    for a, b in found:
        file_graph.setdefault(a, set()).add(b)
    for comp in strongly_connected(file_graph):
        cycle = shortest_cycle(file_graph, comp)
        members = ", ".join(os.path.relpath(p, src) for p in comp)
        problems.append(f"file cycle among {len(comp)} files ({members}): {describe(cycle, found, src)}")
        if show_edges:
            inside = set(comp)
            for (a, b), lines in sorted(found.items()):
                if a in inside and b in inside:
                    at = ",".join(str(n) for n in sorted(set(lines)))
                    problems.append(f"    {os.path.relpath(a, src)}:{at} -> {os.path.relpath(b, src)}")

    for p in problems:
        print(p)
    if problems:
        return 1
    print(
        f"layers: {len(crate.files)} files, {len(found)} file dependencies and {len(modules)} "
        f"between {len(names)} top-level modules: all downward, no cycle"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
