#!/usr/bin/env bash
# deploy/ renders and validates offline:
#   1. yamllint on every YAML file under deploy/;
#   2. `kubectl kustomize` of base and of each overlay;
#   3. yamllint on the rendered manifests (long lines allowed);
#   4. every rendered object validated against the Kubernetes and
#      prometheus-operator schemas (tests/deploy/k8s-validate, pinned
#      versions installed with `npm ci` into WORK);
#   5. every pod template meets the restricted Pod Security Standard's
#      settings and has resource requests;
#   6. the trainer pods carry the labels the NetworkPolicy admits on the
#      coordinator's gRPC port;
#   7. every PromQL expression of the Grafana dashboard parses
#      (`promtool check rules`); its namespace variable offers "All" (a
#      regex that also matches series without a namespace, outside
#      Kubernetes) and panels plot the order cache, waiting calls, store
#      bytes and process memory;
#   8. the alerts of the PrometheusRule pass `promtool check rules` and
#      their unit tests (`promtool test rules tests/deploy/alerts.test.yaml`);
#   9. the ha overlay: 3 shardd replicas without volumes on etcd, readiness
#      = leadership, liveness on the "liveness" health service, 3 etcd
#      members, anti-affinity and a PodDisruptionBudget for both;
#  10. base and dev need no operator's CRD (only built-in API groups);
#      prod and ha add the monitoring component (ServiceMonitor +
#      PrometheusRule); the coordinator's and etcd's pods have a
#      PriorityClass rendered with them and requests equal to limits
#      (Guaranteed QoS), shardd's memory at least twice its
#      --order-cache-bytes; every StatefulSet's serviceName is a headless
#      Service of the same render;
#  11. the tenants overlay: shardd reads --auth-policy from its Secret
#      instead of the shared token, team A's trainers carry their own
#      token and a job id of their tenant.
# Usage: manifests_test.sh WORK_DIR. Exit status 0 when all pass.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:?usage: manifests_test.sh WORK_DIR}
mkdir -p "$work"
cd "$root"

echo "== yamllint deploy/"
yamllint -c .yamllint.yaml deploy/

echo "== schema validator (npm ci)"
validator="$work/k8s-validate"
mkdir -p "$validator"
cp tests/deploy/k8s-validate/package.json tests/deploy/k8s-validate/package-lock.json \
  tests/deploy/k8s-validate/validate.mjs "$validator/"
(cd "$validator" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)

rendered=()
for target in base overlays/dev overlays/prod overlays/ha overlays/tenants; do
  out="$work/$(echo "$target" | tr / -).yaml"
  echo "== kubectl kustomize deploy/$target"
  kubectl kustomize "deploy/$target" > "$out"
  # The dashboard's JSON lines inside its ConfigMap may be long.
  yamllint -d "{extends: $root/.yamllint.yaml, rules: {line-length: disable}}" "$out"
  rendered+=("$out")
done

echo "== schemas"
node "$validator/validate.mjs" "${rendered[@]}"

echo "== restricted pod security"
python3 - "${rendered[@]}" <<'PY'
import sys, yaml
failures = 0
for path in sys.argv[1:]:
    for obj in yaml.safe_load_all(open(path)):
        if not obj or obj["kind"] not in ("StatefulSet", "Job", "Deployment"):
            continue
        pod = obj["spec"]["template"]["spec"]
        problems = []
        sc = pod.get("securityContext", {})
        if not sc.get("runAsNonRoot"):
            problems.append("runAsNonRoot")
        if sc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            problems.append("seccompProfile RuntimeDefault")
        for c in pod["containers"]:
            csc = c.get("securityContext", {})
            if csc.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{c['name']}: allowPrivilegeEscalation false")
            if csc.get("capabilities", {}).get("drop") != ["ALL"]:
                problems.append(f"{c['name']}: drop ALL capabilities")
            if "requests" not in c.get("resources", {}):
                problems.append(f"{c['name']}: resource requests")
        print(("FAIL " if problems else "ok   ") + f"{path}: {obj['kind']}/"
              f"{obj['metadata']['name']} {', '.join(problems)}")
        failures += bool(problems)
sys.exit(1 if failures else 0)
PY

echo "== trainers may reach the coordinator"
python3 - "${rendered[@]}" <<'PY'
import sys, yaml
failures = 0
for path in sys.argv[1:]:
    objs = [o for o in yaml.safe_load_all(open(path)) if o]
    policies = [o for o in objs if o["kind"] == "NetworkPolicy"]
    for job in (o for o in objs if o["kind"] == "Job"):
        labels = job["spec"]["template"]["metadata"].get("labels", {})
        admitted = any(
            all(labels.get(k) == v for k, v in
                peer.get("podSelector", {}).get("matchLabels", {}).items())
            and "podSelector" in peer
            for policy in policies for rule in policy["spec"]["ingress"]
            for peer in rule.get("from", [])
            if any(p.get("port") == 7070 for p in rule.get("ports", [])))
        print(("ok   " if admitted else "FAIL ") +
              f"{path}: Job/{job['metadata']['name']} pods admitted to 7070")
        failures += not admitted
sys.exit(1 if failures else 0)
PY

echo "== tenants overlay: a policy instead of one token"
python3 - "$work/overlays-tenants.yaml" <<'PY'
import sys
sys.path.insert(0, "tests/deploy")
from render_checks import Expectations, objects
objs, expect = objects(sys.argv[1]), Expectations()
def secrets(pod):
    return {v["name"]: v["secret"]["secretName"]
            for v in pod["volumes"] if "secret" in v}
shardd = objs[("StatefulSet", "shardd")]["spec"]["template"]["spec"]
args = shardd["containers"][0]["args"]
expect("--auth-policy=/etc/shard/auth/policy.yaml" in args and
       not any(a.startswith("--auth-token-file") for a in args),
       "shardd reads --auth-policy, not a shared token")
expect(secrets(shardd).get("auth") == "shardd-auth-policy",
       "the policy comes from the Secret shardd-auth-policy")
train = objs[("Job", "shard-train")]["spec"]["template"]["spec"]
expect("--job=team-a-example" in train["containers"][0]["args"],
       "team A's trainers run a job of their tenant")
expect(secrets(train).get("auth") == "team-a-trainer-token",
       "team A's trainers carry their own token")
expect.done()
PY

echo "== ha overlay: replicas on etcd"
python3 - "$work/overlays-ha.yaml" <<'PY'
import sys
sys.path.insert(0, "tests/deploy")
from render_checks import Expectations, objects
objs, expect = objects(sys.argv[1]), Expectations()
shardd = objs[("StatefulSet", "shardd")]["spec"]
pod = shardd["template"]["spec"]
c = pod["containers"][0]
expect(shardd["replicas"] == 3, "3 shardd replicas")
expect("volumeClaimTemplates" not in shardd and
       all(m["name"] != "data" for m in c.get("volumeMounts", [])),
       "shardd has no data volume")
expect(not any(a.startswith("--data-dir") for a in c["args"]) and
       any(a.startswith("--etcd-endpoints=etcd-0.etcd:2379,") for a in c["args"]),
       "shardd keeps its state in etcd")
expect("service" not in c["readinessProbe"]["grpc"],
       "readiness = the overall health status (SERVING on the leader alone)")
expect(c["livenessProbe"]["grpc"].get("service") == "liveness",
       "liveness = the 'liveness' health service (standbys stay alive)")
etcd = objs[("StatefulSet", "etcd")]["spec"]
expect(etcd["replicas"] == 3, "3 etcd members")
for name, spec in (("shardd", shardd), ("etcd", etcd)):
    anti = spec["template"]["spec"].get("affinity", {}).get("podAntiAffinity", {})
    expect(bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution")),
           f"{name} replicas on different nodes")
    expect(("PodDisruptionBudget", name) in objs, f"{name} PodDisruptionBudget")
expect.done()
PY

echo "== operator CRDs only where asked; coordinator pods scheduled to stay"
python3 - "${rendered[@]}" <<'PY'
import re, sys, yaml
BUILT_IN = ("v1", "apps/v1", "batch/v1", "policy/v1",
            "networking.k8s.io/v1", "scheduling.k8s.io/v1")
UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
failures = []
def expect(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
def quantity(text):
    number, unit = re.fullmatch(r"(\d+)([KMG]i)?", str(text)).groups()
    return int(number) * UNITS.get(unit, 1)
for path in sys.argv[1:]:
    objs = [o for o in yaml.safe_load_all(open(path)) if o]
    kinds = {(o["kind"], o["metadata"]["name"]): o for o in objs}
    monitoring = sorted(o["kind"] for o in objs
                        if o["apiVersion"].startswith("monitoring.coreos.com/"))
    foreign = sorted({o["apiVersion"] for o in objs} - set(BUILT_IN) -
                     {"monitoring.coreos.com/v1"})
    expect(not foreign, f"{path}: no other API groups {foreign}")
    wanted = ([] if re.search(r"(base|dev)\.yaml$", path)
              else ["PrometheusRule", "ServiceMonitor"])
    expect(monitoring == wanted, f"{path}: operator objects {monitoring}")
    for (kind, name), obj in kinds.items():
        if kind != "StatefulSet":
            continue
        spec = obj["spec"]
        service = kinds.get(("Service", spec["serviceName"]))
        expect(service is not None and
               service["spec"].get("clusterIP") == "None",
               f"{path}: StatefulSet/{name} serviceName "
               f"{spec['serviceName']} is a headless Service")
        pod = spec["template"]["spec"]
        priority = pod.get("priorityClassName")
        expect(("PriorityClass", priority) in kinds,
               f"{path}: StatefulSet/{name} has PriorityClass {priority}")
        container = pod["containers"][0]
        resources = container["resources"]
        requests, limits = resources.get("requests"), resources.get("limits")
        expect(requests == limits and {"cpu", "memory"} <= set(limits or {}),
               f"{path}: StatefulSet/{name} requests = limits (Guaranteed "
               f"QoS) {resources}")
        if name == "shardd":
            cache = [int(a.split("=")[1]) for a in container["args"]
                     if a.startswith("--order-cache-bytes=")]
            expect(len(cache) == 1 and
                   2 * cache[0] <= quantity(limits["memory"]),
                   f"{path}: shardd's memory limit {limits['memory']} is at "
                   f"least twice --order-cache-bytes {cache}")
sys.exit(1 if failures else 0)
PY

echo "== dashboard PromQL"
python3 - "$root/deploy/base/grafana/shard-dashboard.json" "$work/dashboard-rules.yaml" <<'PY'
import json, sys
dashboard = json.load(open(sys.argv[1]))
rules = []
for panel in dashboard["panels"]:
    for target in panel["targets"]:
        expr = target["expr"].replace("$namespace", "shard")
        rules.append({"record": f"dashboard:panel{panel['id']}:{target['refId']}",
                      "expr": expr})
json.dump({"groups": [{"name": "dashboard", "rules": rules}]},
          open(sys.argv[2], "w"))
print(f"{len(rules)} expressions")
# Outside Kubernetes series carry no namespace: "All" must match them.
namespace = next(v for v in dashboard["templating"]["list"]
                 if v["name"] == "namespace")
exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
problems = []
if not (namespace.get("includeAll") and namespace.get("allValue") == ".*"):
    problems.append("the namespace variable offers All (.*)")
if any('namespace="' in e for e in exprs):
    problems.append("panels match the namespace as a regex (=~)")
for metric in ("shard_order_cache_bytes", "shard_waiting_calls",
               "shard_store_bytes", "process_resident_memory_bytes"):
    if not any(metric in e for e in exprs):
        problems.append(f"a panel plots {metric}")
for problem in problems:
    print(f"FAIL dashboard: {problem}")
sys.exit(1 if problems else 0)
PY
promtool check rules "$work/dashboard-rules.yaml"

echo "== alerts"
python3 - deploy/components/monitoring/shardd-prometheusrule.yaml "$work/shardd-alerts.rules.yaml" <<'PY'
import sys, yaml
rule = yaml.safe_load(open(sys.argv[1]))
yaml.safe_dump({"groups": rule["spec"]["groups"]}, open(sys.argv[2], "w"))
PY
cp tests/deploy/alerts.test.yaml "$work/"
promtool check rules "$work/shardd-alerts.rules.yaml"
promtool test rules "$work/alerts.test.yaml"
echo "manifests: all checks passed"
