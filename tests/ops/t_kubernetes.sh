# Sourced by tests/ops/run.sh: the Kubernetes manifests (deploy/kubernetes/)
# are valid, and true to the code they deploy.  No cluster is needed:
#   - yamllint (deploy/kubernetes/.yamllint.yaml) accepts every file, and
#     refuses a duplicate key;
#   - `kubectl kustomize` (kubectl's own parsing, offline) renders
#     kustomization.yaml into exactly the objects expected, all in the
#     boxcar namespace.  `kubectl apply/create --dry-run=client` are not
#     used: even in client mode they ask an API server which resources
#     exist, and fail without one;
#   - every object of a built-in kind is checked field by field against the
#     Kubernetes API schema of Debian's python3-kubernetes (k8s_schema.py:
#     names, types, required fields), which is shown to refuse bad input;
#     the CRD objects (KEDA's, the Prometheus Operator's) are checked by
#     hand below, against the objects they point at;
#   - against the code: the container's flags are `boxcar worker --help`'s,
#     its variables are ones the worker reads, the metrics port, the probe
#     paths and the drain timeout are the worker's; the worker is run with
#     the Deployment's arguments and its probes answered on the paths the
#     manifest names, not ready while it drains, and it exits within the
#     grace period; the KEDA query runs on a migrated database and counts
#     what it should.

K8S=deploy/kubernetes
KPY=/usr/bin/python3   # Debian's: python3-kubernetes and python3-yaml
have_k8s_tools=1
for tool in yamllint kubectl; do
  if ! command -v "$tool" >/dev/null; then
    not_ok "$tool is installed (make deps)"; have_k8s_tools=0
  fi
done
if ! "$KPY" -c 'import kubernetes, yaml' 2>/dev/null; then
  not_ok "python3-kubernetes is installed (make deps)"; have_k8s_tools=0
fi

# ---- yamllint -------------------------------------------------------------------

if command -v yamllint >/dev/null; then
  if out=$(yamllint -s -c "$K8S/.yamllint.yaml" "$K8S" 2>&1); then
    ok "yamllint accepts deploy/kubernetes"
  else
    not_ok "yamllint accepts deploy/kubernetes"; diag "$out"
  fi
  mkdir -p "$W/k8s-dup"
  sed 's/^  name: boxcar-worker$/  name: boxcar-worker\n  name: again/' "$K8S/pdb.yaml" > "$W/k8s-dup/pdb.yaml"
  check "yamllint refuses a duplicate key" bash -c \
    "! yamllint -s -c '$K8S/.yamllint.yaml' '$W/k8s-dup/pdb.yaml' >/dev/null 2>&1"
fi

# ---- kubectl kustomize -------------------------------------------------------------

# No kubeconfig: nothing may reach for a cluster.
kubectl_off() { env -u KUBECONFIG HOME="$W" KUBECONFIG="$W/no-kubeconfig" kubectl "$@"; }
if command -v kubectl >/dev/null; then
  diag "kubectl: $(kubectl_off version --client 2>/dev/null | head -1)"
  if kubectl_off kustomize "$K8S" > "$W/k8s.yaml" 2> "$W/k8s.err"; then
    ok "kubectl kustomize renders deploy/kubernetes"
  else
    not_ok "kubectl kustomize renders deploy/kubernetes"; diag "$(cat "$W/k8s.err")"
  fi
  # And says no to a resource without a name.
  mkdir -p "$W/k8s-noname"
  cp "$K8S"/*.yaml "$W/k8s-noname/"
  sed -i '/^  name: boxcar-worker$/d' "$W/k8s-noname/pdb.yaml"
  check "kubectl kustomize refuses an object without a name" bash -c \
    "! env HOME='$W' KUBECONFIG='$W/no-kubeconfig' kubectl kustomize '$W/k8s-noname' >/dev/null 2>&1"
fi

# ---- the API schema ----------------------------------------------------------------

if [[ -s $W/k8s.yaml ]] && "$KPY" -c 'import kubernetes, yaml' 2>/dev/null; then
  "$KPY" tests/ops/k8s_schema.py "$W/k8s.yaml" "$K8S/secret.example.yaml" "$K8S/migrate-job.yaml" \
    > "$W/k8s-schema.out" 2>&1
  rc=$?
  is "every built-in object passes the schema, the CRD objects are named unchecked" \
    "$rc $(sed 's/:.*//' "$W/k8s-schema.out" | sort | tr '\n' ' ')" \
    "0 ok ConfigMap/boxcar-worker ok Deployment/boxcar-worker ok Job/boxcar-migrate ok Namespace/boxcar ok NetworkPolicy/boxcar-worker ok PodDisruptionBudget/boxcar-worker ok Secret/boxcar-keda ok Secret/boxcar-worker ok Service/boxcar-worker-metrics unchecked ScaledObject/boxcar-worker unchecked ServiceMonitor/boxcar-worker unchecked TriggerAuthentication/boxcar-queue-stats "
  grep -q '^error' "$W/k8s-schema.out" && diag "$(grep '^error' "$W/k8s-schema.out")"
  diag "schema: python3-kubernetes $("$KPY" -c 'import kubernetes; print(kubernetes.__version__)')"
  # The checker must be able to say no, or the check above means nothing.
  schema_refuses() {  # schema_refuses DESC SED-EXPR FILE WANT-IN-OUTPUT
    local out
    out=$(sed "$2" "$3" | "$KPY" tests/ops/k8s_schema.py - 2>&1)
    if [[ $? -ne 0 && $out == *"$4"* ]]; then ok "schema check refuses $1"; else not_ok "schema check refuses $1"; diag "$out"; fi
  }
  schema_refuses "a misspelt field" 's/readinessProbe:/readynessProbe:/' "$K8S/deployment.yaml" \
    "unknown field 'readynessProbe'"
  schema_refuses "a port as a string" 's/containerPort: 9464/containerPort: "9464"/' "$K8S/deployment.yaml" \
    "containerPort: '9464' is not of type int"
  schema_refuses "a missing required field" '/^      port: 9464$/d' "$K8S/service.yaml" \
    "required field 'port' of V1ServicePort is missing"
  schema_refuses "a bad quantity" 's/memory: 5Gi/memory: 5 GiB/' "$K8S/deployment.yaml" "is not a quantity"
  schema_refuses "a bad seccomp type" 's/type: Localhost/type: localhost/' "$K8S/deployment.yaml" \
    "'localhost' is not one of"
  schema_refuses "a field too new even for the newer list" 's/type: Unconfined/type: Unconfined\n              profile: x/' \
    "$K8S/deployment.yaml" "unknown field 'profile' (Kubernetes 1.30)"
  schema_refuses "a number in a ConfigMap" 's/BOXCAR_CONCURRENCY: "4"/BOXCAR_CONCURRENCY: 4/' "$K8S/configmap.yaml" \
    "BOXCAR_CONCURRENCY: 4 is not of type str"
  schema_refuses "a NetworkPolicy rule under the wrong key" 's/^  egress:/  egres:/' "$K8S/networkpolicy.yaml" \
    "unknown field 'egres'"
fi

# ---- against the code ----------------------------------------------------------------

if [[ -s $W/k8s.yaml && -x $BOXCAR ]] && "$KPY" -c 'import yaml' 2>/dev/null; then
  "$BOXCAR" worker --help > "$W/worker-help.txt" 2>&1
  "$KPY" - "$W/k8s.yaml" "$K8S/secret.example.yaml" "$K8S/migrate-job.yaml" docker-compose.yml \
    "$W/worker-help.txt" > "$W/k8s.tap" 2>&1 <<'EOF'
import re, sys, yaml
rendered, secrets, migrate, compose, helpf = sys.argv[1:6]
objs = [d for d in yaml.safe_load_all(open(rendered)) if d]
sec = {d["metadata"]["name"]: d for d in yaml.safe_load_all(open(secrets)) if d}
job = yaml.safe_load(open(migrate))
help_text = open(helpf).read()
flags = set(re.findall(r"^\s+(--[a-z0-9-]+)", help_text, re.M))
def check(desc, cond, detail=""):
    print(("ok" if cond else "not ok") + " - " + desc)
    if not cond and detail:
        print("# " + str(detail))
def one(kind, name=None):
    found = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    return found[0] if len(found) == 1 else {}
def seconds(v):
    m = re.fullmatch(r"(\d+)(ms|s|m|h)?", str(v))
    return int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)] if m else None
def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())

dep = one("Deployment", "boxcar-worker")
check("a Deployment named boxcar-worker", bool(dep))
pod = dep.get("spec", {}).get("template", {})
plabels = pod.get("metadata", {}).get("labels", {})
spec = pod.get("spec", {})
c = (spec.get("containers") or [{}])[0]
check("one container", len(spec.get("containers", [])) == 1)
check("the Deployment's selector matches its pods", matches(dep["spec"]["selector"]["matchLabels"], plabels))
check("no replicas field (KEDA's HPA owns the count)", "replicas" not in dep["spec"])

# The command line: the image's entrypoint runs `boxcar worker FLAGS`.
args = c.get("args", [])
check("the container runs `boxcar worker`", args[:2] == ["boxcar", "worker"] and "command" not in c)
opts = {}
i = 2
while i < len(args):
    a = args[i]
    if a in flags and i + 1 < len(args) and not args[i + 1].startswith("--"):
        opts[a] = args[i + 1]; i += 2
    else:
        opts[a] = True; i += 1
unknown = [a for a in opts if a not in flags]
check("every flag of the container is one of `boxcar worker --help`'s", not unknown, unknown)
m = re.search(r"--drain-timeout DUR.*?\(default: (\w+)\)", help_text, re.S)
check("--drain-timeout is set explicitly", "--drain-timeout" in opts)
drain = seconds(opts.get("--drain-timeout", m.group(1) if m else None))
grace = spec.get("terminationGracePeriodSeconds", 30)
check("terminationGracePeriodSeconds (%s) is above --drain-timeout (%ss), by at most 60s"
      % (grace, drain), drain is not None and drain < grace <= drain + 60)
maddr = str(opts.get("--metrics-addr", ""))
mport = int(maddr.rsplit(":", 1)[1]) if ":" in maddr else None
ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
check("--metrics-addr listens on all addresses, on the container's metrics port",
      maddr.startswith(":") and ports.get("metrics") == mport, (maddr, ports))
lp, rp = c.get("livenessProbe", {}).get("httpGet", {}), c.get("readinessProbe", {}).get("httpGet", {})
check("liveness probe: GET /healthz on the metrics port", lp.get("path") == "/healthz" and lp.get("port") in ("metrics", mport))
check("readiness probe: GET /readyz on the metrics port", rp.get("path") == "/readyz" and rp.get("port") in ("metrics", mport))
check("both paths are the worker's (--help names them)", "/healthz" in help_text and "/readyz" in help_text)

# The environment: the ConfigMap's and the Secret's keys are variables the
# worker reads (its --help lists them), secrets only in the Secret.
cm = one("ConfigMap", "boxcar-worker")
refs = [(e.get("configMapRef") or {}).get("name") for e in c.get("envFrom", [])] + \
       [(e.get("secretRef") or {}).get("name") for e in c.get("envFrom", [])]
check("envFrom the ConfigMap and the Secret boxcar-worker",
      "boxcar-worker" in [(e.get("configMapRef") or {}).get("name") for e in c.get("envFrom", [])] and
      "boxcar-worker" in [(e.get("secretRef") or {}).get("name") for e in c.get("envFrom", [])] and bool(cm))
envkeys = list(cm.get("data", {})) + list(sec.get("boxcar-worker", {}).get("stringData", {}))
unread = [k for k in envkeys if not re.search(r"\b%s\b" % re.escape(k), help_text)]
check("every variable of the ConfigMap and the Secret is one `boxcar worker --help` names", not unread, unread)
check("the Secret has DATABASE_URL, the AWS keys and BOXCAR_WEBHOOK_SECRET",
      {"DATABASE_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "BOXCAR_WEBHOOK_SECRET"}
      <= set(sec.get("boxcar-worker", {}).get("stringData", {})))
leaked = [k for k in cm.get("data", {}) if re.search(r"SECRET|PASSWORD|DATABASE_URL|TOKEN", k)]
check("no secret in the ConfigMap", not leaked, leaked)

# The sandbox's privileges: compose's, and not privileged.
sc = c.get("securityContext", {})
cw = yaml.safe_load(open(compose))["services"]["worker"]
check("not privileged", sc.get("privileged") is False and not spec.get("hostPID") and not spec.get("hostNetwork"))
check("root, as the docs say", sc.get("runAsUser") == 0)
check("drops every capability, adds back exactly compose's cap_add",
      sc.get("capabilities", {}).get("drop") == ["ALL"] and
      sorted(sc.get("capabilities", {}).get("add", [])) == sorted(cw["cap_add"]))
sp = sc.get("seccompProfile", {})
check("seccomp: the Localhost profile boxcar/docker-seccomp.json (compose's deploy/docker-seccomp.json)",
      sp.get("type") == "Localhost" and sp.get("localhostProfile") == "boxcar/docker-seccomp.json" and
      "seccomp=./deploy/docker-seccomp.json" in [str(o).replace("seccomp:", "seccomp=") for o in cw["security_opt"]])
check("AppArmor unconfined, as compose's apparmor=unconfined",
      sc.get("appArmorProfile") == {"type": "Unconfined"} and "apparmor=unconfined" in cw["security_opt"])
vols = {v["name"]: v for v in spec.get("volumes", [])}
mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
check("/dev/loop-control from the node, a character device",
      vols.get(mounts.get("/dev/loop-control"), {}).get("hostPath") == {"path": "/dev/loop-control", "type": "CharDevice"})
check("/run/boxcar/ids shared with the node's other workers",
      vols.get(mounts.get("/run/boxcar/ids"), {}).get("hostPath", {}).get("path") == "/run/boxcar/ids")
check("the work dir (the image's BOXCAR_WORK_DIR) is an emptyDir",
      "emptyDir" in vols.get(mounts.get("/var/tmp/boxcar"), {}))
check("an init reaps the jobs' orphans (shareProcessNamespace, compose's init: true)",
      spec.get("shareProcessNamespace") is True and cw.get("init") is True)
check("no service account token", spec.get("automountServiceAccountToken") is False)

# Service, ServiceMonitor, PDB, NetworkPolicy point at these pods.
svc = one("Service")
check("the Service selects the worker pods", matches(svc.get("spec", {}).get("selector"), plabels))
sport = [p for p in svc.get("spec", {}).get("ports", []) if p.get("name") == "metrics"]
check("its metrics port targets the container's metrics port",
      len(sport) == 1 and sport[0].get("targetPort") in ("metrics", mport))
sm = one("ServiceMonitor")
check("the ServiceMonitor selects the Service",
      matches(sm.get("spec", {}).get("selector", {}).get("matchLabels"), svc.get("metadata", {}).get("labels", {})))
check("and scrapes its metrics port at /metrics",
      [(e.get("port"), e.get("path")) for e in sm.get("spec", {}).get("endpoints", [])] == [("metrics", "/metrics")])
pdb = one("PodDisruptionBudget")
check("the PodDisruptionBudget covers the worker pods, one at a time",
      matches(pdb.get("spec", {}).get("selector", {}).get("matchLabels"), plabels) and
      pdb["spec"].get("maxUnavailable") == 1 and "minAvailable" not in pdb["spec"])
np = one("NetworkPolicy")
nps = np.get("spec", {})
check("the NetworkPolicy covers the worker pods, both directions",
      matches(nps.get("podSelector", {}).get("matchLabels"), plabels) and
      sorted(nps.get("policyTypes", [])) == ["Egress", "Ingress"])
ing = nps.get("ingress", [])
check("ingress: the metrics port only, from the monitoring namespace only",
      len(ing) == 1 and [p.get("port") for p in ing[0].get("ports", [])] in (["metrics"], [mport]) and
      all(f.get("namespaceSelector", {}).get("matchLabels") == {"kubernetes.io/metadata.name": "monitoring"}
          for f in ing[0].get("from", [])) and ing[0].get("from"))
eports = {(p.get("port"), p.get("protocol")) for r in nps.get("egress", []) for p in r.get("ports", [])}
check("egress: DNS (udp and tcp), PostgreSQL, HTTPS and HTTP",
      {(53, "UDP"), (53, "TCP"), (5432, "TCP"), (443, "TCP"), (80, "TCP")} == eports, eports)
check("egress to the web excludes the metadata address",
      any("169.254.0.0/16" in (t.get("ipBlock") or {}).get("except", [])
          for r in nps.get("egress", []) for t in r.get("to", [])))
check("every namespaced object is in the boxcar namespace",
      all(o["metadata"].get("namespace") == "boxcar" for o in objs if o["kind"] != "Namespace"))
ns = one("Namespace", "boxcar")
check("the namespace admits the pod (Pod Security 'privileged')",
      ns.get("metadata", {}).get("labels", {}).get("pod-security.kubernetes.io/enforce") == "privileged")

# KEDA: its target exists, its numbers follow the ConfigMap.
so = one("ScaledObject", "boxcar-worker")
ref = so.get("spec", {}).get("scaleTargetRef", {})
check("the ScaledObject scales the shipped Deployment",
      ref.get("name") == dep["metadata"]["name"] and ref.get("kind", "Deployment") == "Deployment" and
      ref.get("apiVersion", "apps/v1") == "apps/v1")
trig = [t for t in so.get("spec", {}).get("triggers", []) if t.get("type") == "postgresql"]
md = trig[0]["metadata"] if len(trig) == 1 else {}
check("targetQueryValue is the ConfigMap's BOXCAR_CONCURRENCY",
      md.get("targetQueryValue") == cm.get("data", {}).get("BOXCAR_CONCURRENCY"))
q = re.search(r"where queue = '([^']*)'", md.get("query", ""))
check("the query counts the ConfigMap's BOXCAR_QUEUES",
      q is not None and q.group(1) == cm.get("data", {}).get("BOXCAR_QUEUES"))
ta = one("TriggerAuthentication")
tref = (ta.get("spec", {}).get("secretTargetRef") or [{}])[0]
check("the trigger authenticates with the TriggerAuthentication, from the Secret boxcar-keda's connection",
      len(trig) == 1 and trig[0].get("authenticationRef", {}).get("name") == ta.get("metadata", {}).get("name") and
      tref.get("parameter") == "connection" and tref.get("key") == "connection" and
      "connection" in sec.get(tref.get("name"), {}).get("stringData", {}))
check("0 <= minReplicaCount <= maxReplicaCount",
      0 <= so["spec"].get("minReplicaCount", 0) <= so["spec"]["maxReplicaCount"])

# The migrate Job: same image, `boxcar migrate`, unprivileged.
jc = job["spec"]["template"]["spec"]["containers"][0]
check("the migrate Job runs `boxcar migrate` from the worker's image",
      jc.get("args") == ["boxcar", "migrate"] and jc.get("image") == c.get("image"))
check("as nobody, without capabilities",
      jc["securityContext"].get("runAsUser") == 65534 and jc["securityContext"]["capabilities"]["drop"] == ["ALL"])
print("DRAIN %s" % drain)
print("GRACE %s" % grace)
print("ARGS %s" % " ".join(a for a in args[2:] if a not in ("--metrics-addr", ":9464")))
print("QUERY %s" % md.get("query", ""))
# The ConfigMap's settings but S3's (the run below has no S3).
print("ENV %s" % " ".join("%s=%s" % kv for kv in cm.get("data", {}).items()
                          if not kv[0].startswith(("AWS_", "BOXCAR_S3_"))))
EOF
  while IFS= read -r line; do
    case $line in
      "ok - "*) ok "${line#ok - }" ;;
      "not ok - "*) not_ok "${line#not ok - }" ;;
      DRAIN\ *) k8s_drain=${line#DRAIN } ;;
      GRACE\ *) k8s_grace=${line#GRACE } ;;
      ARGS\ *) read -ra k8s_args <<< "${line#ARGS }" ;;
      QUERY\ *) k8s_query=${line#QUERY } ;;
      ENV\ *) read -ra k8s_env <<< "${line#ENV }" ;;
      *) diag "$line" ;;
    esac
  done < "$W/k8s.tap"
  grep -q '^ok - \|^not ok - ' "$W/k8s.tap" || not_ok "Kubernetes consistency checks ran"
fi

if [[ -n ${k8s_query:-} ]]; then
  is "the KEDA query is the one deploy/README.md shows" \
    "$(awk '/^```sql$/{f=1; next} /^```$/{f=0} f' deploy/README.md | grep active_queue_stats | head -1)" "$k8s_query"
fi

# ---- the worker, run with the Deployment's arguments ----------------------------

if [[ -n ${k8s_args+x} && -x $BOXCAR ]] && psql -X -qtA "$BOXCAR_ADMIN_URL" -c 'select 1' >/dev/null 2>&1; then
  fresh_db boxcar_k8s >/dev/null 2>&1
  # The KEDA query as the manifest has it: 0 on a fresh schema, then the
  # due jobs of its queue only.
  is "KEDA query runs on the migrated schema" "$(sql "$k8s_query" 2>&1)" 0
  sql "select boxcar.enqueue('default', '{\"command\": [\"true\"]}'::jsonb)" >/dev/null 2>&1
  sql "select boxcar.enqueue('other', '{\"command\": [\"true\"]}'::jsonb)" >/dev/null 2>&1
  sql "select boxcar.enqueue('default', '{\"command\": [\"true\"]}'::jsonb, run_at => now() + interval '1 hour')" >/dev/null 2>&1
  is "KEDA query counts the due jobs of its queue only" "$(sql "$k8s_query" 2>&1)" 1
  # What deploy/README.md says it also counts: a job waiting for its
  # dependency, and the jobs of a paused queue (replicas kept for them).
  dep_on=$(sql "select boxcar.enqueue('default', '{\"command\": [\"true\"]}'::jsonb)" 2>&1)
  sql "select boxcar.enqueue('default', '{\"command\": [\"true\"]}'::jsonb, depends_on => array['$dep_on'::uuid])" >/dev/null 2>&1
  is "KEDA query counts a job waiting for its dependency (documented)" "$(sql "$k8s_query" 2>&1)" 3
  sql "select boxcar.pause_queue('default')" >/dev/null 2>&1
  is "and the jobs of a paused queue (documented)" "$(sql "$k8s_query" 2>&1)" 3
  sql "delete from boxcar.jobs; delete from boxcar.queue_config" >/dev/null

  # `--help` after flags exits 0 only when every flag before it was
  # accepted, values included.
  check "boxcar worker accepts the Deployment's flags and values" \
    bash -c '"$@" >/dev/null' _ "$BOXCAR" worker "${k8s_args[@]}" --metrics-addr :9464 --help
  check "(and would refuse a bad value)" bash -c "! '$BOXCAR' worker --drain-timeout 60x --help >/dev/null 2>&1"
  # The Deployment's flags, its metrics address on a free loopback port
  # instead of :9464, plain processes (the sandbox's privileges are
  # t_docker_privs'), and the ConfigMap's settings but S3's.
  kport=$(free_port)
  K="http://127.0.0.1:$kport"
  diag "ConfigMap settings used: ${k8s_env[*]}"
  env "${k8s_env[@]}" true || not_ok "the ConfigMap's settings are NAME=VALUE"
  for kv in "${k8s_env[@]}"; do export "${kv?}"; done
  start_worker k8s-w "${k8s_args[@]}" --metrics-addr "127.0.0.1:$kport" --sandbox none
  for kv in "${k8s_env[@]}"; do unset "${kv%%=*}"; done
  kpid=$WORKER_PID
  code_of() { curl -s -o /dev/null -w '%{http_code}' "$K$1"; }
  check "the liveness probe's /healthz answers 200" wait_for "healthz" 10 bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' '$K/healthz') == 200 ]]"
  check "the readiness probe's /readyz answers 200" wait_for "readyz" 15 bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' '$K/readyz') == 200 ]]"
  id=$("$BOXCAR" enqueue -- sleep 3)
  wait_for "running" 10 sql_true "select status = 'running' from boxcar.jobs where id = '$id'"
  t0=$(date +%s%N)
  kill -TERM "$kpid"
  check "while it drains, /readyz is 503 (the pod leaves the endpoints)" \
    wait_for "draining" 5 bash -c "[[ \$(curl -s '$K/readyz') == draining ]]"
  is "and /healthz is still 200 (no restart mid-drain)" "$(code_of /healthz)" 200
  wait "$kpid"; krc=$?
  el=$(( ($(date +%s%N) - t0) / 1000000000 ))
  is "the worker exits 0 after the drain" "$krc" 0
  check "within terminationGracePeriodSeconds (${el}s < ${k8s_grace}s)" test "$el" -lt "${k8s_grace:-0}"
  is "its running job finished during the drain" "$(job_field "$id" status)" succeeded
  # The migrate Job's user: `boxcar migrate` needs no privilege at all.
  if command -v setpriv >/dev/null && [[ $(id -u) == 0 ]]; then
    out=$(cd / && setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all --bounding-set=-all \
            env -i PATH=/usr/bin:/bin DATABASE_URL="$DATABASE_URL" "$BOXCAR" migrate 2>&1)
    is "boxcar migrate runs as the Job's uid 65534 without capabilities" "$?" 0
    [[ -n $out ]] && diag "$out"
  fi
else
  skip "the worker with the Deployment's arguments, the KEDA query (no PostgreSQL or no $BOXCAR)"
fi
