#!/usr/bin/env python3
"""Every alert in deploy/prometheus/rules.yml links a runbook entry that exists, and is unit-tested
both firing and silent.

- each alert has annotations.runbook_url = <docs/runbook.md URL>#<anchor>, and <anchor> is the
  GitHub anchor of a heading of docs/runbook.md (the anchor rules of .ci/doc_links.py);
- deploy/prometheus/rules_test.yml has, for each alert, a case expecting it to fire (non-empty
  exp_alerts) and a case expecting silence (empty exp_alerts), and names no unknown alert.
"""
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from doc_links import anchors  # noqa: E402  (one definition of GitHub's anchor rules)

ROOT = Path(__file__).resolve().parent.parent
RUNBOOK = ROOT / "docs/runbook.md"
RUNBOOK_URL = "https://example.invalid/drbgd/blob/main/docs/runbook.md"


def main():
    errors = []
    rules = yaml.safe_load((ROOT / "deploy/prometheus/rules.yml").read_text())
    alerts = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
    headings = anchors(RUNBOOK) if RUNBOOK.is_file() else set()
    if not headings:
        errors.append(f"{RUNBOOK.relative_to(ROOT)} is missing or has no headings")
    for a in alerts:
        url = (a.get("annotations") or {}).get("runbook_url", "")
        base, _, anchor = url.partition("#")
        if base != RUNBOOK_URL or not anchor:
            errors.append(f"{a['alert']}: runbook_url {url!r} is not {RUNBOOK_URL}#<anchor>")
        elif anchor not in headings:
            errors.append(f"{a['alert']}: runbook anchor #{anchor} is no heading of docs/runbook.md")

    tests = yaml.safe_load((ROOT / "deploy/prometheus/rules_test.yml").read_text())
    fires, silent = set(), set()
    names = {a["alert"] for a in alerts}
    for t in tests["tests"]:
        for art in t.get("alert_rule_test") or []:
            name = art["alertname"]
            if name not in names:
                errors.append(f"test {t['name']!r} names unknown alert {name}")
            (fires if art.get("exp_alerts") else silent).add(name)
    for name in sorted(names):
        if name not in fires:
            errors.append(f"{name}: no unit test expects it to fire")
        if name not in silent:
            errors.append(f"{name}: no unit test expects it to stay silent")

    for e in errors:
        print("FAIL", e)
    print(f"{len(alerts)} alerts: runbook links and firing/silent tests, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
