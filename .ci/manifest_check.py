#!/usr/bin/env python3
"""Checks of the rendered Kubernetes manifests by what they do when applied.

usage: .ci/manifest_check.py [--require-tls TARGET]... TARGET...

TARGET is a kustomize directory (rendered with a plain `kustomize build`) or a rendered file.
For each Deployment the effective drbgd settings are computed as the binary computes them:
config/default.toml (embedded in the binary) <- the file named by --config, read from the
mounted ConfigMap <- DRBGD__SECTION__KEY environment variables. Then:

- every key set by the ConfigMap file or the environment exists in config/default.toml;
- rollout: no spec.replicas on a Deployment an HPA scales; server.shutdown_delay_ms > 0 and
  terminationGracePeriodSeconds >= (shutdown_delay_ms + drain_timeout_ms) / 1000 + 5;
  server.max_connection_age_ms > 0 (gRPC connections rebalance);
- selectors: the Deployment's own selector, every Service, PodDisruptionBudget, NetworkPolicy
  and topology spread constraint select the pod template; every Service targetPort names a
  container port; the ServiceMonitor selects exactly one Service, which has its port;
- probes: startup, readiness and liveness are plain HTTP on the admin port;
- files drbgd watches (TLS certificate and key, API keys file) come from Secret volumes
  mounted as whole directories (subPath mounts never see Secret updates);
- with --require-tls: tls.enabled and auth.enabled are on, from mounted Secrets.
"""
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEFAULTS = tomllib.loads((ROOT / "config/default.toml").read_text())
MARGIN_S = 5


def render(target):
    path = Path(target)
    if path.is_dir():
        text = subprocess.run(["kustomize", "build", str(path)], check=True, capture_output=True, text=True).stdout
    else:
        text = path.read_text()
    return [d for d in yaml.safe_load_all(text) if d]


def selects(selector, labels):
    """matchLabels and matchExpressions (see .ci/netpol_check.py for the full semantics)."""
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != str(v):
            return False
    for e in selector.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], [str(v) for v in e.get("values") or []]
        ok = {"In": k in labels and labels.get(k) in vals, "NotIn": labels.get(k) not in vals or k not in labels,
              "Exists": k in labels, "DoesNotExist": k not in labels}[op]
        if not ok:
            return False
    return True


def key_exists(section_path, key):
    node = DEFAULTS
    for part in section_path:
        node = node.get(part)
        if not isinstance(node, dict):
            return False
    return key in node


def walk(table, prefix=()):
    for k, v in table.items():
        if isinstance(v, dict):
            yield from walk(v, prefix + (k,))
        else:
            yield prefix, k, v


def parse_env(value):
    if value in ("true", "false"):
        return value == "true"
    try:
        return int(value)
    except ValueError:
        return value


def effective_settings(dep, configmaps, errors, where):
    """(settings dict, container) for the drbgd container of a Deployment."""
    spec = dep["spec"]["template"]["spec"]
    c = spec["containers"][0]
    settings = {s: dict(v) if isinstance(v, dict) else v for s, v in DEFAULTS.items()}
    args = c.get("args") or []
    if "--config" in args:
        cfg_path = args[args.index("--config") + 1]
        volumes = {v["name"]: v for v in spec.get("volumes") or []}
        found = None
        for m in c.get("volumeMounts") or []:
            vol = volumes.get(m["name"], {})
            if "configMap" not in vol:
                continue
            mount = m["mountPath"].rstrip("/")
            if m.get("subPath") and cfg_path == mount:
                found = (vol["configMap"]["name"], m["subPath"])
            elif not m.get("subPath") and cfg_path.startswith(mount + "/"):
                found = (vol["configMap"]["name"], cfg_path[len(mount) + 1:])
        if not found:
            errors.append(f"{where}: --config {cfg_path} is not a file of a mounted ConfigMap")
        else:
            cm = configmaps.get(found[0])
            if cm is None or found[1] not in (cm.get("data") or {}):
                errors.append(f"{where}: ConfigMap {found[0]} has no key {found[1]}")
            else:
                file_cfg = tomllib.loads(cm["data"][found[1]])
                for sect, key, value in walk(file_cfg):
                    if not key_exists(sect, key):
                        errors.append(f"{where}: {found[1]} sets {'.'.join(sect + (key,))}, which config/default.toml does not have")
                    node = settings
                    for part in sect:
                        node = node.setdefault(part, {})
                    node[key] = value
    for e in c.get("env") or []:
        name = e["name"]
        if not name.startswith("DRBGD__") or "value" not in e:
            continue
        parts = [p.lower() for p in name[len("DRBGD__"):].split("__")]
        if not key_exists(parts[:-1], parts[-1]):
            errors.append(f"{where}: env {name} names no key of config/default.toml")
            continue
        node = settings
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = parse_env(e["value"])
    return settings, c


def secret_file(path, dep, errors, where, what):
    """The file must lie in a Secret volume mounted as a directory."""
    spec = dep["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec.get("volumes") or []}
    for m in spec["containers"][0].get("volumeMounts") or []:
        mount = m["mountPath"].rstrip("/")
        if path == mount or path.startswith(mount + "/"):
            vol = volumes.get(m["name"], {})
            if "secret" not in vol:
                errors.append(f"{where}: {what} {path} is not on a Secret volume")
            elif m.get("subPath"):
                errors.append(f"{where}: {what} {path} is a subPath mount, which Secret updates never reach")
            elif vol["secret"].get("optional"):
                errors.append(f"{where}: {what} comes from an optional Secret ({vol['secret']['secretName']})")
            else:
                return vol["secret"]["secretName"]
            return None
    errors.append(f"{where}: {what} {path} is not under any volume mount")
    return None


def check(target, docs, require_tls):
    errors = []
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    configmaps = {d["metadata"]["name"]: d for d in by_kind.get("ConfigMap", [])}
    hpa_targets = {(h["spec"]["scaleTargetRef"]["kind"], h["spec"]["scaleTargetRef"]["name"]) for h in by_kind.get("HorizontalPodAutoscaler", [])}
    deployments = by_kind.get("Deployment", [])
    if not deployments:
        return [f"{target}: no Deployment"]
    for h in by_kind.get("HorizontalPodAutoscaler", []):
        ref = h["spec"]["scaleTargetRef"]
        if not any(d["metadata"]["name"] == ref["name"] and ref["kind"] == "Deployment" for d in deployments):
            errors.append(f"{target}: HPA {h['metadata']['name']} scales a missing {ref['kind']} {ref['name']}")
    for dep in deployments:
        name = dep["metadata"]["name"]
        where = f"{target}: Deployment {name}"
        labels = dep["spec"]["template"]["metadata"].get("labels") or {}
        tspec = dep["spec"]["template"]["spec"]
        if ("Deployment", name) in hpa_targets and "replicas" in dep["spec"]:
            errors.append(f"{where}: spec.replicas is set although an HPA owns the count")
        if not selects(dep["spec"]["selector"], labels):
            errors.append(f"{where}: its selector does not select its own pod template")
        for t in tspec.get("topologySpreadConstraints") or []:
            if not selects(t["labelSelector"], labels):
                errors.append(f"{where}: topology spread over {t['topologyKey']} does not count its own pods")

        s, c = effective_settings(dep, configmaps, errors, where)
        srv = s["server"]
        delay, drain = srv.get("shutdown_delay_ms", 0), srv["drain_timeout_ms"]
        grace = tspec.get("terminationGracePeriodSeconds", 30)
        if not delay:
            errors.append(f"{where}: server.shutdown_delay_ms is 0: the listener would stop while endpoints are still being removed")
        if grace < (delay + drain) / 1000 + MARGIN_S:
            errors.append(f"{where}: terminationGracePeriodSeconds {grace} < shutdown_delay {delay} ms + drain {drain} ms + {MARGIN_S} s")
        if not srv.get("max_connection_age_ms"):
            errors.append(f"{where}: server.max_connection_age_ms is 0: gRPC connections through the Service never rebalance")

        ports = {p["name"]: p for p in c.get("ports") or []}
        admin_port = int(srv["admin_listen"].rsplit(":", 1)[1])
        api_port = int(srv["listen"].rsplit(":", 1)[1])
        if ports.get("admin", {}).get("containerPort") != admin_port or ports.get("http", {}).get("containerPort") != api_port:
            errors.append(f"{where}: container ports {ports} do not match listen {srv['listen']} / admin_listen {srv['admin_listen']}")
        if srv["listen"].startswith("127.") or srv["admin_listen"].startswith("127."):
            errors.append(f"{where}: a listener is bound to loopback, unreachable from the pod network")
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            p = c.get(probe)
            if not p or "httpGet" not in p:
                errors.append(f"{where}: no HTTP {probe}")
                continue
            hg = p["httpGet"]
            if hg.get("port") not in ("admin", admin_port) or hg.get("scheme", "HTTP") != "HTTP":
                errors.append(f"{where}: {probe} is not plain HTTP on the admin port: {hg}")

        tls, auth = s["tls"], s["auth"]
        if tls["enabled"]:
            for key in ("cert_file", "key_file"):
                secret_file(tls[key], dep, errors, where, f"tls.{key}")
        if auth["enabled"] and auth.get("api_keys_file"):
            secret_file(auth["api_keys_file"], dep, errors, where, "auth.api_keys_file")
        if target in require_tls:
            if not tls["enabled"]:
                errors.append(f"{where}: the API port does not serve TLS")
            if not (auth["enabled"] and auth.get("api_keys_file")):
                errors.append(f"{where}: API keys are not required from a mounted file")

        for svc in by_kind.get("Service", []):
            if not selects({"matchLabels": svc["spec"].get("selector") or {}}, labels) or not svc["spec"].get("selector"):
                errors.append(f"{target}: Service {svc['metadata']['name']} does not select the pods")
            for p in svc["spec"]["ports"]:
                tp = p.get("targetPort", p["port"])
                if isinstance(tp, str) and tp not in ports or isinstance(tp, int) and tp not in (q["containerPort"] for q in ports.values()):
                    errors.append(f"{target}: Service {svc['metadata']['name']} port {p['name']} targets {tp}, no such container port")
            if tls["enabled"] and any(p.get("appProtocol") in ("http", "kubernetes.io/h2c") and p.get("targetPort") == "http" for p in svc["spec"]["ports"]):
                errors.append(f"{target}: Service {svc['metadata']['name']} announces plaintext on the TLS port")
        for pdb in by_kind.get("PodDisruptionBudget", []):
            if not selects(pdb["spec"]["selector"], labels):
                errors.append(f"{target}: PodDisruptionBudget {pdb['metadata']['name']} does not select the pods")
        for np in by_kind.get("NetworkPolicy", []):
            if not selects(np["spec"]["podSelector"], labels):
                errors.append(f"{target}: NetworkPolicy {np['metadata']['name']} does not protect the pods")

    for sm in by_kind.get("ServiceMonitor", []):
        chosen = [svc for svc in by_kind.get("Service", []) if selects(sm["spec"]["selector"], svc["metadata"].get("labels") or {})]
        if len(chosen) != 1:
            errors.append(f"{target}: ServiceMonitor {sm['metadata']['name']} selects {len(chosen)} Services (want exactly 1: more double the targets)")
        for ep in sm["spec"]["endpoints"]:
            for svc in chosen:
                if ep["port"] not in (p["name"] for p in svc["spec"]["ports"]):
                    errors.append(f"{target}: ServiceMonitor port {ep['port']} is not a port of Service {svc['metadata']['name']}")

    summary = ", ".join(f"{len(v)} {k}" for k, v in sorted(by_kind.items()))
    print(f"{target}: {summary}; {len(errors)} problems")
    return errors


def main(argv):
    require_tls, targets = set(), []
    it = iter(argv)
    for a in it:
        if a == "--require-tls":
            require_tls.add(next(it))
        else:
            targets.append(a)
    errors = []
    for t in targets:
        errors += check(t, render(t), require_tls)
    for e in errors:
        print("FAIL", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
