#!/usr/bin/env python3
"""Turns a `perf record` of drbgd into a table: share of CPU per layer / function group.

Usage: perf report -i perf.data --no-children --sort dso,symbol --stdio -g none \\
         | scripts/perf-groups.py
Groups are matched in order by the patterns below (first match wins), on the symbol name.
"""
import re
import sys

GROUPS = [
    ("kernel: TCP, syscalls, scheduling", r"^\[k\]"),
    ("logging (tracing-subscriber format + write)", r"drbgd::telemetry|itoa|tracing_subscriber|tracing_appender|nu_ansi_term|tracing_core|core::fmt|fmt::Write|write_str|write_fmt|Formatter|<.*as core::fmt::Display>"),
    ("metrics (prometheus)", r"prometheus"),
    ("generators (ChaCha, AES, BLAKE3, Randen)", r"chacha20|aes::|aes_|blake3|randen|drbgd::drbg|ctr_drbg|fast_key_erasure"),
    ("drbgd service + handlers", r"drbgd::(service|http|grpc|error|state)"),
    ("drbgd connection loop", r"drbgd::server"),
    ("tower / tower-http layers", r"tower_http|tower::|tower_layer"),
    ("axum routing", r"axum"),
    ("hyper HTTP/1 and HTTP/2", r"hyper|h2::|httparse|http::header|http::"),
    ("tokio runtime", r"tokio"),
    ("allocation (malloc/free)", r"malloc|free|realloc|__rust_alloc|__rust_dealloc|alloc::raw_vec|_int_"),
    ("memcpy/memset", r"mem(move|cpy|set)"),
]


def main():
    shares = {name: 0.0 for name, _ in GROUPS}
    other = 0.0
    for line in sys.stdin:
        m = re.match(r"\s+([0-9.]+)%\s+(\S+)\s+(\[[.k]\])\s+(.*)$", line)
        if not m:
            continue
        pct, _dso, kind, symbol = float(m.group(1)), m.group(2), m.group(3), m.group(4).strip()
        name = f"{kind} {symbol}"
        for group, pattern in GROUPS:
            if re.search(pattern, name if group.startswith("kernel") else symbol):
                shares[group] += pct
                break
        else:
            other += pct
    print("| group | share of drbgd's CPU |")
    print("|---|---|")
    for group, _ in GROUPS:
        print(f"| {group} | {shares[group]:.1f} % |")
    print(f"| other | {other:.1f} % |")


if __name__ == "__main__":
    main()
