#!/usr/bin/env bash
# The source files one request passes through, read from a trace of the real binary: the
# server runs under valgrind's callgrind (a debug build, whose symbols name every function's
# module, so inlining hides nothing), one request warms it up, the counters are zeroed, one
# more request is made and the counters dumped. Every function of drbgd's that ran for that
# request is mapped to its file (the module path is the file path), and the calls from the
# call pipeline (src/pipeline/) into the HTTP layer (src/http*) are counted: each is the
# pipeline handing over to, or calling back into, the layer above it.
#
# Usage: scripts/request-files.sh [path=/bits?n=256]
# Env:   DRBGD=path (default target/debug/drbgd, built if missing).
# Needs: valgrind (Debian), curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
path=${1:-"/bits?n=256"}
drbgd=${DRBGD:-target/debug/drbgd}
[ -x "$drbgd" ] || cargo build --locked --bin drbgd
work=$(mktemp -d)
trap 'kill -KILL $pid 2>/dev/null || true; rm -rf "$work"' EXIT
port=28392
valgrind --tool=callgrind --callgrind-out-file="$work/cg" --dump-instr=no --demangle=no "$drbgd" serve \
  --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$((port + 1))" --shards 1 >/dev/null 2>"$work/vg.err" &
pid=$!
for _ in $(seq 600); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/version")" = 200 ] && break
  sleep 0.2
done
curl -s -o /dev/null "http://127.0.0.1:$port$path"
callgrind_control -z "$pid" >/dev/null
curl -s -o /dev/null "http://127.0.0.1:$port$path"
callgrind_control -d "$pid" >/dev/null
sleep 1
kill -KILL "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
python3 - "$work" <<'PY'
import glob, os, re, sys
from collections import defaultdict
# Symbols are read mangled (valgrind's demangler drops the hash that tells the instances of a
# generic function apart, and would merge every `FnOnce::call_once` into one node): Rust's
# legacy mangling is length-prefixed segments, the last one the hash.
def demangle(symbol):
    if not symbol.startswith('_ZN'):
        return symbol
    rest, parts = symbol[3:], []
    while rest and rest[0].isdigit():
        n = re.match(r'\d+', rest).group(0)
        parts.append(rest[len(n):len(n) + int(n)])
        rest = rest[len(n) + int(n):]
    text = '::'.join(parts)
    for a, b in [('..', '::'), ('$LT$', '<'), ('$GT$', '>'), ('$u20$', ' '), ('$RF$', '&'), ('$C$', ','),
                 ('$u7b$', '{'), ('$u7d$', '}'), ('$BP$', '*'), ('$u5b$', '['), ('$u5d$', ']')]:
        text = text.replace(a, b)
    return text
# A drbgd function's file, from its demangled name (`drbgd::pipeline::layer::...`, also inside
# `<... as ...>` impls): the longest module path that is a file in src/.
def file_of(name):
    for m in re.finditer(r'drbgd::((?:[a-z_0-9]+::)*[a-z_0-9]+)', name or ''):
        parts = m.group(1).split('::')
        for n in range(len(parts), 0, -1):
            f = 'src/' + '/'.join(parts[:n]) + '.rs'
            if os.path.exists(f):
                return f
    return None
edges = defaultdict(int)
for dump in glob.glob(sys.argv[1] + '/cg*'):
    names, current, callee = {}, None, None
    for line in open(dump, errors='replace'):
        m = re.match(r'(c?)fn=\((\d+)\)(?: (.*))?', line)
        if m:
            if m.group(3):
                names[m.group(2)] = demangle(m.group(3).strip())
            if m.group(1):
                callee = names.get(m.group(2))
            else:
                current = names.get(m.group(2))
            continue
        m = re.match(r'calls=(\d+)', line)
        if m and current and callee:
            edges[(current, callee)] += int(m.group(1))
# What the request ran: everything called, through any crate but tokio's scheduler, from the
# connection's task (its service, `connection_layer`, and its driver); other tasks (health polls, the log
# writer, the accept loop) run through the scheduler, so they are not reached.
children = defaultdict(set)
for (a, b) in edges:
    children[a].add(b)
seen = {f for f in children if re.search(r'drbgd::server::(connection::)?(connection_layer|drive|Connection)', f)}
todo = list(seen)
while todo:
    for b in children[todo.pop()]:
        if b not in seen and not re.match(r'tokio::runtime::(task|scheduler|context|park|blocking)', b):
            seen.add(b)
            todo.append(b)
files = sorted({file_of(f) for f in seen} - {None})
print(f'{len(files)} files of drbgd ran for the request:')
for f in files:
    print(f'  {f}')
up = {(file_of(a), file_of(b), re.sub(r'::h[0-9a-f]{16}$', '', b)): n for (a, b), n in edges.items()
      if a in seen and (file_of(a) or '').startswith('src/pipeline')
      and (file_of(b) or '').startswith(('src/http/', 'src/http.rs'))}
print(f'calls from src/pipeline/ into the HTTP layer: {sum(up.values())}')
for (a, b, fn), n in sorted(up.items()):
    print(f'  {n}x {a} -> {b}: {fn}')
PY
