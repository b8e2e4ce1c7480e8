#!/usr/bin/env python3
"""Every alert in deploy/prometheus/rules.yml links a runbook entry that exists, and is unit-tested
both firing and silent.

- each alert has annotations.runbook_url = <README URL>#<anchor>, and <anchor> is the GitHub
  anchor of a heading inside README.md's "## Runbook" section;
- deploy/prometheus/rules_test.yml has, for each alert, a case expecting it to fire (non-empty
  exp_alerts) and a case expecting silence (empty exp_alerts), and names no unknown alert.
"""
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
README_URL = "https://example.invalid/drbgd/blob/main/README.md"


def github_anchor(heading):
    """GitHub's heading slug: lower case, punctuation dropped (not - or _), spaces to hyphens."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def runbook_anchors(readme):
    anchors, inside = set(), False
    for line in readme.splitlines():
        if line.startswith("## "):
            inside = line[3:].strip() == "Runbook"
            if inside:
                anchors.add(github_anchor(line[3:]))
        elif inside and line.startswith("###"):
            anchors.add(github_anchor(line.lstrip("#")))
    return anchors


def main():
    errors = []
    rules = yaml.safe_load((ROOT / "deploy/prometheus/rules.yml").read_text())
    alerts = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
    anchors = runbook_anchors((ROOT / "README.md").read_text())
    if not anchors:
        errors.append("README.md has no '## Runbook' section")
    for a in alerts:
        url = (a.get("annotations") or {}).get("runbook_url", "")
        base, _, anchor = url.partition("#")
        if base != README_URL or not anchor:
            errors.append(f"{a['alert']}: runbook_url {url!r} is not {README_URL}#<anchor>")
        elif anchor not in anchors:
            errors.append(f"{a['alert']}: runbook anchor #{anchor} is no heading of README's Runbook section")

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
