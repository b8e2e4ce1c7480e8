#!/usr/bin/env python3
"""NetworkPolicy test by meaning: who may connect to drbgd's pods once the manifests are applied.

usage: .ci/netpol_check.py [--self-test] TARGET...

Each TARGET is a kustomize directory (rendered here with a plain `kustomize build`, no flags) or
an already rendered YAML file. For every rendered Deployment, the pods it would create are
placed in its namespace, and connection attempts from modelled source pods are evaluated with
Kubernetes' NetworkPolicy semantics:

- a policy applies to a pod when it is in the pod's namespace, its spec.podSelector selects the
  pod (an empty selector selects all) and its policyTypes include Ingress (policyTypes absent:
  Ingress, plus Egress when egress rules exist);
- no policy applies -> all ingress allowed; otherwise allowed iff some rule of some applying
  policy allows it (policies and rules are a union);
- a rule with no `from` admits every source, with no `ports` every port; a peer with only a
  podSelector means pods in the policy's namespace, with only a namespaceSelector every pod in
  the matching namespaces, with both the matching pods in the matching namespaces; ipBlock peers
  never match a pod here (pod IPs are not modelled);
- selectors: matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist) ANDed; NotIn
  and DoesNotExist match a pod without the key; an empty selector matches everything;
- ports: number or name; a name is resolved against the destination container's ports (name
  and protocol); protocol defaults to TCP; endPort gives a range.
- namespaces carry the automatic label kubernetes.io/metadata.name.

Expectations (drbgd's contract, README "Deploy"):
- a pod labelled drbgd-client=true, with any other labels, in drbgd's namespace or any other
  namespace, reaches the API port and not the admin port;
- the monitoring namespace's Prometheus pod (prometheus-operator's labels) reaches the admin
  port and not the API port;
- a Prometheus-labelled pod outside the monitoring namespace, and unlabelled pods anywhere,
  reach neither.

Exit status 0 when every expectation holds, 1 otherwise (each failure printed).
"""
import random
import subprocess
import sys
from pathlib import Path

import yaml

API_PORT = "http"  # container port names in the Deployment
ADMIN_PORT = "admin"


# --- selector and policy semantics -------------------------------------------------------------

def selector_matches(selector, labels):
    """Kubernetes LabelSelector semantics. `None` (absent) is handled by the caller."""
    if selector is None:
        raise ValueError("absent selector must be handled by the caller")
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != str(value):
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], [str(v) for v in expr.get("values") or []]
        present = key in labels
        if op == "In":
            if not values:
                raise ValueError(f"operator In needs values: {expr}")
            if not (present and labels[key] in values):
                return False
        elif op == "NotIn":
            if not values:
                raise ValueError(f"operator NotIn needs values: {expr}")
            if present and labels[key] in values:
                return False
        elif op == "Exists":
            if values:
                raise ValueError(f"operator Exists takes no values: {expr}")
            if not present:
                return False
        elif op == "DoesNotExist":
            if values:
                raise ValueError(f"operator DoesNotExist takes no values: {expr}")
            if present:
                return False
        else:
            raise ValueError(f"unknown selector operator {op!r}")
    return True


def policy_types(spec):
    types = spec.get("policyTypes")
    if types:
        return set(types)
    return {"Ingress"} | ({"Egress"} if "egress" in spec else set())


def peer_matches(peer, policy_ns, src):
    if "ipBlock" in peer:
        return False
    pod_sel, ns_sel = peer.get("podSelector"), peer.get("namespaceSelector")
    if pod_sel is None and ns_sel is None:
        raise ValueError(f"peer with no selector: {peer}")
    if ns_sel is None:
        ns_ok = src["namespace"] == policy_ns
    else:
        ns_ok = selector_matches(ns_sel, src["namespace_labels"])
    pod_ok = True if pod_sel is None else selector_matches(pod_sel, src["labels"])
    return ns_ok and pod_ok


def port_matches(rule_port, dst, port_number, protocol):
    if (rule_port.get("protocol") or "TCP") != protocol:
        return False
    port = rule_port.get("port")
    if port is None:
        return True  # all ports of this protocol
    if isinstance(port, str) and not port.isdigit():
        named = [p for p in dst["ports"] if p.get("name") == port and (p.get("protocol") or "TCP") == protocol]
        return any(p["containerPort"] == port_number for p in named)
    low = int(port)
    high = int(rule_port.get("endPort", low))
    return low <= port_number <= high


def rule_allows(rule, policy_ns, src, dst, port_number, protocol):
    peers = rule.get("from")
    if peers and not any(peer_matches(p, policy_ns, src) for p in peers):
        return False
    ports = rule.get("ports")
    if ports and not any(port_matches(p, dst, port_number, protocol) for p in ports):
        return False
    return True


def ingress_allowed(policies, src, dst, port_number, protocol="TCP"):
    applying = [
        p for p in policies
        if p["metadata"].get("namespace", "default") == dst["namespace"]
        and selector_matches(p["spec"].get("podSelector") or {}, dst["labels"])
        and "Ingress" in policy_types(p["spec"])
    ]
    if not applying:
        return True
    return any(
        rule_allows(rule, p["metadata"].get("namespace", "default"), src, dst, port_number, protocol)
        for p in applying
        for rule in p["spec"].get("ingress") or []
    )


# --- the modelled cluster -----------------------------------------------------------------------

def namespace(name, **extra):
    return {"kubernetes.io/metadata.name": name, **extra}


def pod(name, ns, labels, ns_labels=None):
    return {"name": name, "namespace": ns, "labels": labels, "namespace_labels": ns_labels or namespace(ns)}


def random_labels(rng, n):
    """Unrelated labels a real client pod might carry (including other apps' recommended labels)."""
    keys = ["app", "team", "tier", "version", "app.kubernetes.io/name", "app.kubernetes.io/instance",
            "app.kubernetes.io/component", "app.kubernetes.io/part-of", "pod-template-hash", "env"]
    words = ["web", "billing", "api", "worker", "v2", "blue", "green", "frontend", "batch", "edge"]
    return {k: rng.choice(words) for k in rng.sample(keys, n)}


def sources(drbgd_ns, rng):
    """(source pod, reaches API?, reaches admin?) triples."""
    other = "payments"
    prometheus_labels = {  # what prometheus-operator puts on its pods
        "app.kubernetes.io/name": "prometheus",
        "app.kubernetes.io/instance": "k8s",
        "app.kubernetes.io/managed-by": "prometheus-operator",
        "operator.prometheus.io/name": "k8s",
        "operator.prometheus.io/shard": "0",
        "prometheus": "k8s",
    }
    out = [
        (pod("client-only-label", drbgd_ns, {"drbgd-client": "true"}), True, False),
        (pod("client-only-label-other-ns", other, {"drbgd-client": "true"}), True, False),
        (pod("prometheus", "monitoring", prometheus_labels), False, True),
        (pod("prometheus-elsewhere", other, prometheus_labels), False, False),
        (pod("unlabelled", drbgd_ns, {}), False, False),
        (pod("unlabelled-other-ns", other, {}), False, False),
        (pod("unlabelled-monitoring", "monitoring", {}), False, False),
        (pod("client-false", drbgd_ns, {"drbgd-client": "false"}), False, False),
        (pod("looks-like-drbgd", drbgd_ns, {"app.kubernetes.io/name": "drbgd", "app.kubernetes.io/part-of": "drbgd"}), False, False),
        (pod("looks-like-drbgd-in-monitoring", "monitoring", {"app.kubernetes.io/name": "drbgd", "app.kubernetes.io/part-of": "drbgd"}), False, False),
    ]
    for i in range(20):
        ns = rng.choice([drbgd_ns, other, "team-a", "monitoring"])
        out.append((pod(f"client-random-{i}", ns, {**random_labels(rng, rng.randint(1, 6)), "drbgd-client": "true"}), True, False))
        out.append((pod(f"random-{i}", ns, random_labels(rng, rng.randint(0, 6))), False, False))
    return out


def destinations(docs):
    """One pod per Deployment, with its template labels, namespace and container ports."""
    out = []
    for d in docs:
        if d.get("kind") != "Deployment":
            continue
        template = d["spec"]["template"]
        ports = [p for c in template["spec"]["containers"] for p in c.get("ports") or []]
        out.append({
            "name": d["metadata"]["name"],
            "namespace": d["metadata"].get("namespace", "default"),
            "labels": {k: str(v) for k, v in (template["metadata"].get("labels") or {}).items()},
            "ports": ports,
        })
    return out


def container_port(dst, name):
    for p in dst["ports"]:
        if p.get("name") == name:
            return p["containerPort"], p.get("protocol") or "TCP"
    raise SystemExit(f"{dst['name']}: no container port named {name!r}")


def check(label, docs):
    policies = [d for d in docs if d.get("kind") == "NetworkPolicy"]
    dsts = destinations(docs)
    if not dsts:
        return [f"{label}: no Deployment rendered"]
    if not policies:
        return [f"{label}: no NetworkPolicy rendered (every pod could connect)"]
    failures, checked = [], 0
    for dst in dsts:
        rng = random.Random(12)  # the same modelled cluster on every run
        api = container_port(dst, API_PORT)
        admin = container_port(dst, ADMIN_PORT)
        for src, want_api, want_admin in sources(dst["namespace"], rng):
            for port_name, (number, proto), want in ((API_PORT, api, want_api), (ADMIN_PORT, admin, want_admin)):
                got = ingress_allowed(policies, src, dst, number, proto)
                checked += 1
                if got != want:
                    failures.append(
                        f"{label}: {src['namespace']}/{src['name']} {src['labels']} -> "
                        f"{dst['namespace']}/{dst['name']}:{port_name} ({number}/{proto}): "
                        f"{'allowed' if got else 'denied'}, expected {'allowed' if want else 'denied'}")
    print(f"{label}: {checked} connections evaluated against {len(policies)} NetworkPolicy, {len(failures)} wrong")
    return failures


def render(target):
    path = Path(target)
    if path.is_dir():
        text = subprocess.run(["kustomize", "build", str(path)], check=True, capture_output=True, text=True).stdout
    else:
        text = path.read_text()
    return [d for d in yaml.safe_load_all(text) if d]


# --- the evaluator's own test: the semantics above, case by case --------------------------------

def self_test():
    m = selector_matches
    assert m({}, {}) and m({}, {"a": "1"})
    assert m({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}) and not m({"matchLabels": {"a": "1"}}, {"a": "2"})
    assert not m({"matchLabels": {"a": "1", "b": "2"}}, {"a": "1"})
    ex = lambda op, vals=None: {"matchExpressions": [{"key": "a", "operator": op, **({"values": vals} if vals is not None else {})}]}
    assert m(ex("In", ["1", "2"]), {"a": "2"}) and not m(ex("In", ["1"]), {}) and not m(ex("In", ["1"]), {"a": "3"})
    assert m(ex("NotIn", ["1"]), {}) and m(ex("NotIn", ["1"]), {"a": "2"}) and not m(ex("NotIn", ["1"]), {"a": "1"})
    assert m(ex("Exists"), {"a": ""}) and not m(ex("Exists"), {"b": "1"})
    assert m(ex("DoesNotExist"), {"b": "1"}) and not m(ex("DoesNotExist"), {"a": "1"})
    both = {"matchLabels": {"b": "2"}, "matchExpressions": [{"key": "a", "operator": "Exists"}]}
    assert m(both, {"a": "x", "b": "2"}) and not m(both, {"b": "2"}) and not m(both, {"a": "x"})
    for bad in (ex("In", []), ex("Exists", ["1"]), ex("Gt", ["1"])):
        try:
            m(bad, {"a": "1"})
        except ValueError:
            pass
        else:
            raise AssertionError(f"accepted invalid selector {bad}")

    dst = {"name": "d", "namespace": "ns", "labels": {"app": "d"},
           "ports": [{"name": "http", "containerPort": 8080}, {"name": "dns", "containerPort": 53, "protocol": "UDP"}]}
    a = pod("a", "ns", {"role": "a"})
    b = pod("b", "other", {"role": "a"}, namespace("other", team="x"))
    pol = lambda spec, ns="ns": {"kind": "NetworkPolicy", "metadata": {"name": "p", "namespace": ns}, "spec": spec}
    allow = ingress_allowed
    assert allow([], a, dst, 8080)  # no policy: not isolated
    assert allow([pol({"podSelector": {}, "ingress": []}, ns="elsewhere")], a, dst, 8080)  # other namespace's policy
    assert allow([pol({"podSelector": {"matchLabels": {"app": "x"}}, "ingress": []})], a, dst, 8080)  # selects other pods
    assert allow([pol({"podSelector": {}, "policyTypes": ["Egress"], "egress": []})], a, dst, 8080)  # egress only
    assert not allow([pol({"podSelector": {}})], a, dst, 8080)  # Ingress by default, no rules: deny all
    assert not allow([pol({"podSelector": {}, "egress": [{}]})], a, dst, 8080)  # default types include Ingress
    assert allow([pol({"podSelector": {}, "ingress": [{}]})], b, dst, 8080)  # empty rule: everything
    pod_only = pol({"podSelector": {}, "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "a"}}}]}]})
    assert allow([pod_only], a, dst, 8080) and not allow([pod_only], b, dst, 8080)  # podSelector alone: own namespace
    ns_only = pol({"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "x"}}}]}]})
    assert allow([ns_only], b, dst, 8080) and not allow([ns_only], a, dst, 8080)
    any_ns = pol({"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"role": "a"}}}]}]})
    assert allow([any_ns], a, dst, 8080) and allow([any_ns], b, dst, 8080)
    and_peer = pol({"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "x"}}, "podSelector": {"matchLabels": {"role": "b"}}}]}]})
    assert not allow([and_peer], b, dst, 8080)  # both selectors must match
    assert not allow([pol({"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}]})], a, dst, 8080)
    named = pol({"podSelector": {}, "ingress": [{"ports": [{"port": "http"}]}]})
    assert allow([named], a, dst, 8080) and not allow([named], a, dst, 8081)
    assert not allow([pol({"podSelector": {}, "ingress": [{"ports": [{"port": "http", "protocol": "UDP"}]}]})], a, dst, 8080, "UDP")
    assert allow([pol({"podSelector": {}, "ingress": [{"ports": [{"port": "dns", "protocol": "UDP"}]}]})], a, dst, 53, "UDP")
    ranged = pol({"podSelector": {}, "ingress": [{"ports": [{"port": 8000, "endPort": 8100}]}]})
    assert allow([ranged], a, dst, 8080) and not allow([ranged], a, dst, 8101) and not allow([ranged], a, dst, 8080, "UDP")
    union = [pol({"podSelector": {}, "ingress": [{"ports": [{"port": 1}]}]}), pol({"podSelector": {}, "ingress": [{"ports": [{"port": 8080}]}]})]
    assert allow(union, a, dst, 8080) and allow(union, a, dst, 1) and not allow(union, a, dst, 2)
    print("evaluator self-test: ok")


def main(argv):
    if "--self-test" in argv:
        argv = [a for a in argv if a != "--self-test"]
        self_test()
    if not argv:
        return 0
    failures = []
    for target in argv:
        failures += check(target, render(target))
    for f in failures[:15]:
        print("FAIL", f)
    if len(failures) > 15:
        print(f"... and {len(failures) - 15} more")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
