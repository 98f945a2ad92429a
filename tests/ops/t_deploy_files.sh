# Sourced by tests/ops/run.sh: the deployment files are valid and say
# what they must.
#   - docker-compose.yml passes `docker-compose config -q` (and a broken
#     copy does not), with replicas, healthchecks, the one-shot migrate and
#     a stop grace period longer than the drain;
#   - the Dockerfile is multi-stage Debian 12, non-root, and its package
#     lists cover what the build needs and what the binaries link;
#   - (the Kubernetes manifests, the KEDA ScaledObject among them, are
#     t_kubernetes's;)
#   - the systemd unit stops with SIGTERM and waits longer than the drain;
#   - /metrics as test_metrics fetched it is valid exposition format 0.0.4
#     (checked by a strict parser below, itself shown to reject bad input).
# No Docker engine is needed: compose files are only validated.

# ---- docker-compose.yml -----------------------------------------------------

compose_config() {  # compose_config FILE [ARGS...]: in a clean environment
  local f=$1; shift
  env -i PATH="$PATH" HOME="$W" docker-compose --project-directory "$(dirname "$f")" \
      -f "$f" config "$@"
}

if ! command -v docker-compose >/dev/null; then
  skip "docker-compose config -q (docker-compose not installed)"
else
  if out=$(compose_config docker-compose.yml -q 2>&1); then
    ok "docker-compose config -q accepts docker-compose.yml"
  else
    not_ok "docker-compose config -q accepts docker-compose.yml"; diag "$out"
  fi
  # The validator must be able to say no, or the check above means nothing.
  mkdir -p "$W/broken"
  sed 's/^\(\s*replicas:\) 3/\1 three/' docker-compose.yml > "$W/broken/docker-compose.yml"
  cp Dockerfile "$W/broken/"
  if compose_config "$W/broken/docker-compose.yml" -q >/dev/null 2>&1; then
    not_ok "docker-compose config -q rejects replicas: three"
  else
    ok "docker-compose config -q rejects replicas: three"
  fi
  compose_config docker-compose.yml > "$W/compose.resolved.yml" 2>/dev/null
fi

# Structural checks on the resolved configuration (anchors, interpolation
# and defaults applied).  python3-yaml comes with docker-compose.
if [[ -s $W/compose.resolved.yml ]] && have_yaml; then
  python3 - "$W/compose.resolved.yml" > "$W/compose.tap" 2>&1 <<'EOF'
import re, sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
s = c.get("services", {})
def check(desc, cond):
    print(("ok" if cond else "not ok") + " - " + desc)
def seconds(v):
    m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", str(v))
    return int(m.group(1) or 0) * 60 + float(m.group(2) or 0) if m and v else None
def dep(svc, on):
    d = s.get(svc, {}).get("depends_on", {})
    return d.get(on, {}).get("condition") if isinstance(d, dict) else None
w = s.get("worker", {})
cmd = w.get("command", [])
check("services postgres, minio, minio-init, migrate, worker",
      {"postgres", "minio", "minio-init", "migrate", "worker"} <= set(s))
check("postgres is PostgreSQL 15", str(s.get("postgres", {}).get("image", "")).startswith("postgres:15"))
for name in ("postgres", "minio"):
    hc = s.get(name, {}).get("healthcheck", {})
    check(name + " has a healthcheck", bool(hc.get("test")) and not hc.get("disable"))
check("minio-init waits for healthy minio", dep("minio-init", "minio") == "service_healthy")
check("minio-init creates the bucket", "mc mb" in " ".join(map(str, s.get("minio-init", {}).get("command", []))))
m = s.get("migrate", {})
check("migrate runs `boxcar migrate` once", m.get("command") == ["boxcar", "migrate"] and m.get("restart") == "no")
check("migrate waits for healthy postgres", dep("migrate", "postgres") == "service_healthy")
check("worker has deploy.replicas: 3", w.get("deploy", {}).get("replicas") == 3)
check("worker waits for migrate to complete", dep("worker", "migrate") == "service_completed_successfully")
check("worker waits for the bucket", dep("worker", "minio-init") == "service_completed_successfully")
check("worker runs `boxcar worker --metrics-addr :9464`",
      cmd[:2] == ["boxcar", "worker"] and "--metrics-addr" in cmd and
      cmd[cmd.index("--metrics-addr") + 1] == ":9464")
check("worker exposes 9464", "9464" in [str(p) for p in w.get("expose", [])])
drain = seconds(cmd[cmd.index("--drain-timeout") + 1]) if "--drain-timeout" in cmd else 60
grace = seconds(w.get("stop_grace_period", "10s"))
check("stop_grace_period (%ss) > drain timeout (%ss)" % (grace, drain), grace and grace > drain)
check("worker runs under an init", w.get("init") is True)
env = w.get("environment", {})
for k in ("DATABASE_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3",
          "BOXCAR_S3_BUCKET", "BOXCAR_WEBHOOK_SECRET"):
    check("worker environment has " + k, bool(env.get(k)))
check("S3 endpoint is the minio service", str(env.get("AWS_ENDPOINT_URL_S3", "")).startswith("http://minio:"))
check("DATABASE_URL points at the postgres service", "@postgres:5432/" in str(env.get("DATABASE_URL", "")))
opts = [str(o).replace("seccomp:", "seccomp=", 1) for o in w.get("security_opt", [])]
check("worker security_opt is boxcar's seccomp profile and AppArmor unconfined, nothing else",
      sorted(opts) == ["apparmor=unconfined", "seccomp=./deploy/docker-seccomp.json"])
check("worker is not privileged", not w.get("privileged"))
check("worker drops every capability", w.get("cap_drop") == ["ALL"])
check("worker adds back exactly the sandbox's capabilities",
      sorted(w.get("cap_add", [])) == ["CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "MKNOD",
                                       "NET_ADMIN", "NET_BIND_SERVICE", "SETGID", "SETPCAP",
                                       "SETUID", "SYS_ADMIN", "SYS_CHROOT"])
check("worker gets /dev/loop-control and the loop block devices, no other device",
      w.get("devices") == ["/dev/loop-control:/dev/loop-control"] and
      w.get("device_cgroup_rules") == ["b 7:* rwm"])
check("no bind mount of the host's /sys/fs/cgroup",
      not any("/sys/fs/cgroup" in str(v) for v in w.get("volumes", [])))
for name, svc in sorted(s.items()):
    img = str(svc.get("image", ""))
    check("%s image %s is pinned (a tag, not latest)" % (name, img),
          ":" in img.rsplit("/", 1)[-1] and not img.endswith(":latest"))
EOF
  while IFS= read -r line; do
    case $line in
      "ok - "*) ok "${line#ok - }" ;;
      "not ok - "*) not_ok "${line#not ok - }" ;;
      *) diag "$line" ;;
    esac
  done < "$W/compose.tap"
  grep -q '^ok - \|^not ok - ' "$W/compose.tap" || not_ok "compose structure checks ran"
elif [[ -s $W/compose.resolved.yml ]]; then
  # No YAML parser: the same essentials by pattern on the resolved file.
  check "worker has replicas: 3" grep -qE '^\s+replicas: 3$' "$W/compose.resolved.yml"
  check "migrate runs boxcar migrate" grep -qE '^\s+- migrate$' "$W/compose.resolved.yml"
  is "postgres and minio healthchecks" "$(grep -c '^    healthcheck:' "$W/compose.resolved.yml")" 3
fi

# ---- Dockerfile -------------------------------------------------------------

is "Dockerfile has two stages" "$(grep -cE '^FROM ' Dockerfile)" 2
check "Dockerfile is based on a pinned Debian 12 point release" grep -qE '^ARG DEBIAN_IMAGE=debian:12\.[0-9]+-slim$' Dockerfile
# Root in the container: the per-job ext4 workspace needs loop devices and
# mount; compose gives it only the capabilities checked above.
is "runtime stage runs as root" \
  "$(awk '/^FROM .* AS runtime/{r=1} r && /^USER /{print $2}' Dockerfile)" root
check "the entrypoint is boxcar-entrypoint (the cgroup remount)" \
  grep -qE '^ENTRYPOINT \["/usr/local/bin/boxcar-entrypoint"\]$' Dockerfile
check "boxcar-entrypoint is POSIX sh that sh -n accepts" sh -n deploy/docker-entrypoint.sh

# The container's seccomp profile is what its generator writes, and allows
# what the sandbox needs that Docker's default does not.
is "deploy/docker-seccomp.json is scripts/seccomp-docker.py's output" \
  "$(scripts/seccomp-docker.py | cmp - deploy/docker-seccomp.json 2>&1)" ""
check "the profile allows pivot_root, mount, the new mount API and namespaces" python3 -c '
import json, sys
names = set(json.load(open("deploy/docker-seccomp.json"))["syscalls"][0]["names"])
need = {"pivot_root", "mount", "umount2", "open_tree", "move_mount", "mount_setattr", "unshare",
        "setns", "clone", "clone3", "seccomp"}
sys.exit(0 if need <= names else "missing: %s" % (need - names))'
check "the profile denies what neither the worker nor its jobs need" python3 -c '
import json, sys
names = set(json.load(open("deploy/docker-seccomp.json"))["syscalls"][0]["names"])
deny = {"ptrace", "bpf", "kexec_load", "init_module", "finit_module", "keyctl", "add_key",
        "io_uring_setup", "perf_event_open", "userfaultfd", "reboot", "swapon", "acct"}
sys.exit(0 if not names & deny else "allowed: %s" % (names & deny))'

check "the four binaries land in /usr/local/bin" \
  grep -qE '^COPY --from=build .*build/boxcar .*build/boxcar-session-agent .*build/boxcar-guard .*build/boxcar-sandbox /usr/local/bin/' Dockerfile
check "build stage runs make build/boxcar build/boxcar-guard build/boxcar-sandbox build/boxcar-session-agent" \
  grep -qE 'make .*build/boxcar build/boxcar-guard build/boxcar-sandbox build/boxcar-session-agent' Dockerfile
check "the build stage has the agent's sources" grep -qE '^COPY agent/ agent/' Dockerfile

# The build stage installs scripts/deps.sh's BUILD_PKGS (cmocka only serves
# the unit tests); the runtime stage, the packages of what the binaries link.
build_pkgs=$(sed -n '/^BUILD_PKGS=(/,/)/p' scripts/deps.sh | tr -d '()' | sed 's/BUILD_PKGS=//' | tr -s ' \n' '\n')
stage_of() { awk -v s="$1" '/^FROM /{cur=$NF} cur==s' Dockerfile; }
missing=()
for p in $build_pkgs; do
  [[ $p == libcmocka-dev ]] && continue
  stage_of build | grep -qw -- "$p" || missing+=("$p")
done
is "build stage installs every BUILD_PKGS entry" "${missing[*]}" ""
if [[ -x $BUILD/boxcar && -x $BUILD/boxcar-sandbox ]] && command -v objdump >/dev/null; then
  missing=()
  for so in $(objdump -p "$BUILD/boxcar" "$BUILD/boxcar-sandbox" | awk '/NEEDED/{print $2}' | grep -Ev '^lib(asan|ubsan|lsan)\.' | sort -u); do
    pkg=$(dpkg -S "*/$so" 2>/dev/null | grep -v -- '-dev\|i386' | head -1 | cut -d: -f1)
    [[ -z $pkg || $pkg == libc6 ]] && continue
    stage_of runtime | grep -qw -- "$pkg" || missing+=("$so($pkg)")
  done
  is "runtime stage installs the package of every library the binaries link" "${missing[*]}" ""
else
  skip "runtime libraries vs. linked libraries ($BUILD/boxcar not built)"
fi

# ---- systemd ------------------------------------------------------------------

UNIT=deploy/boxcar-worker.service
unit_get() { sed -n "s/^$1=//p" "$UNIT" | tail -1; }
is "unit Type" "$(unit_get Type)" notify
is "unit NotifyAccess" "$(unit_get NotifyAccess)" main
check "unit has a WatchdogSec" test -n "$(unit_get WatchdogSec)"
is "unit Delegate" "$(unit_get Delegate)" yes
is "unit KillSignal" "$(unit_get KillSignal)" SIGTERM
is "unit Restart" "$(unit_get Restart)" on-failure
is "unit ExecStart" "$(unit_get ExecStart)" "/usr/bin/boxcar worker"
stop=$(unit_get TimeoutStopSec); stop=${stop%s}
drain=$(unit_get ExecStart | sed -n 's/.*--drain-timeout \([0-9]*\)s.*/\1/p')
check "unit TimeoutStopSec (${stop}s) > --drain-timeout (${drain:-60}s)" test "${stop:-0}" -gt "${drain:-60}"
# The capabilities the sandbox was shown to need (deploy/README.md), no more.
is "unit CapabilityBoundingSet" "$(unit_get CapabilityBoundingSet | tr ' ' '\n' | sort | tr '\n' ' ')" \
  "CAP_CHOWN CAP_DAC_OVERRIDE CAP_FOWNER CAP_KILL CAP_NET_ADMIN CAP_NET_BIND_SERVICE CAP_SETGID CAP_SETPCAP CAP_SETUID CAP_SYS_ADMIN CAP_SYS_CHROOT "
if command -v systemd-analyze >/dev/null; then
  # The binary and its man page are not installed here: those complaints
  # are expected (tests/ops/t_deb.sh verifies the installed unit in full).
  out=$(systemd-analyze verify "$UNIT" 2>&1 | grep -v 'is not executable\|man boxcar(1)' | sort -u)
  is "systemd-analyze verify finds nothing else" "$out" ""
  sec=$(systemd-analyze security --offline=true --no-pager "$UNIT" 2>&1)
  score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p' <<<"$sec")
  diag "systemd-analyze security: exposure ${score:-?} (README: 6.3 MEDIUM)"
  # The README quotes the score; a change of the hardening must update it.
  check "systemd-analyze security exposure is ${score:-?}, as the README says" \
    bash -c "[[ '$score' == 6.3 ]] && grep -q 'exposure level 6.3 MEDIUM' README.md && grep -q 'exposure level 6.3 MEDIUM' deploy/README.md"
fi

# ---- /metrics exposition format ------------------------------------------------

# A strict reader of the text format 0.0.4: grammar, escaping, one TYPE per
# family before its samples, families contiguous, no duplicate series,
# counters >= 0, histograms with increasing le, cumulative buckets, +Inf
# equal to _count.  Exit 0 and "ok", or the first problem.
cat > "$W/expo.py" <<'EOF'
import math, re, sys
NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"'
SAMPLE = re.compile(r"(%s)(?:\{((?:%s)(?:,%s)*)?,?\})? (\S+)(?: (-?\d+))?$" % (NAME, LABEL, LABEL))
def num(v):
    if v in ("+Inf", "Inf"): return math.inf
    if v == "-Inf": return -math.inf
    if v == "NaN": return math.nan
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", v): raise ValueError(v)
    return float(v)
def main(text):
    if text and not text.endswith("\n"): return "no final newline"
    types, helps, done, series, hist, cur = {}, set(), set(), set(), {}, None
    for n, line in enumerate(text.splitlines(), 1):
        where = "line %d: " % n
        if not line.strip(): continue
        if line.startswith("#"):
            p = line.split(" ", 3)
            if len(p) >= 3 and p[1] in ("HELP", "TYPE"):
                if not re.fullmatch(NAME, p[2]): return where + "bad name"
                if p[2] in done or (cur and p[2] != cur): done.add(cur); cur = None
                if p[2] in done: return where + p[2] + " is not contiguous"
                if p[1] == "HELP":
                    if p[2] in helps: return where + "second HELP"
                    if re.search(r"\\[^\\n]", p[3] if len(p) > 3 else ""): return where + "bad HELP escape"
                    helps.add(p[2])
                else:
                    if p[2] in types: return where + "second TYPE"
                    if len(p) != 4 or p[3] not in ("counter", "gauge", "histogram", "summary", "untyped"):
                        return where + "bad TYPE"
                    types[p[2]] = p[3]
                cur = p[2]
            continue
        m = SAMPLE.match(line)
        if not m: return where + "not a sample: " + line
        name = m.group(1)
        labels = dict(re.findall(LABEL, m.group(2) or "")) if "{" in line else {}
        if len(labels) != len(re.findall(LABEL, m.group(2) or "")): return where + "label twice"
        try: v = num(m.group(7))
        except ValueError: return where + "bad value " + m.group(7)
        fam = name
        if name not in types:
            for suf in ("_bucket", "_sum", "_count"):
                if name.endswith(suf) and types.get(name[: -len(suf)]) == "histogram":
                    fam = name[: -len(suf)]
        t = types.get(fam)
        if t is None: return where + name + " has no TYPE before it"
        if fam != cur: return where + name + " outside its family's block"
        key = (name, tuple(sorted(labels.items())))
        if key in series: return where + "duplicate series"
        series.add(key)
        if t == "counter" and not v >= 0: return where + "negative counter"
        if t == "histogram":
            if name == fam: return where + "histogram sample without _bucket/_sum/_count"
            base = tuple(sorted((k, x) for k, x in labels.items() if k != "le"))
            h = hist.setdefault((fam, base), {"b": [], "count": None})
            if name.endswith("_bucket"):
                if "le" not in labels: return where + "bucket without le"
                h["b"].append((num(labels["le"]), v))
            elif name.endswith("_count"):
                h["count"] = v
            elif "le" in labels: return where + "le on _sum"
    for (fam, base), h in hist.items():
        b = h["b"]
        if not b or b[-1][0] != math.inf: return fam + str(base) + ": no +Inf bucket last"
        if any(b[i][0] >= b[i + 1][0] or b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
            return fam + str(base) + ": buckets not increasing/cumulative"
        if h["count"] != b[-1][1]: return fam + str(base) + ": _count != +Inf bucket"
    return "ok"
print(main(open(sys.argv[1], encoding="utf-8").read()))
EOF

# First the reader itself: it must reject what it exists to catch.
bad_cases=(
  'x_total 1'                                                     # no TYPE
  $'# TYPE x counter\nx -1'                                       # negative counter
  $'# TYPE x gauge\nx{a="b} 1'                                    # unterminated value
  $'# TYPE x gauge\nx{a="\\q"} 1'                                 # bad escape
  $'# TYPE x gauge\nx{a="1"} 1\nx{a="1"} 2'                       # duplicate series
  $'# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1'  # not cumulative
  $'# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1'   # no +Inf
  $'# TYPE x gauge\nx 1\n# TYPE y gauge\ny 1\nx{a="2"} 1'         # not contiguous
)
rejected=0
for c in "${bad_cases[@]}"; do
  printf '%s\n' "$c" > "$W/bad.prom"
  [[ $(python3 "$W/expo.py" "$W/bad.prom") != ok ]] && rejected=$((rejected + 1))
done
is "exposition reader rejects all ${#bad_cases[@]} malformed samples" "$rejected" "${#bad_cases[@]}"

TM="$BUILD/tests/unit/worker/metrics/test_metrics"
if [[ -x $TM ]]; then
  if BOXCAR_METRICS_SAMPLE="$W/metrics.prom" CMOCKA_MESSAGE_OUTPUT=TAP "$TM" > "$W/tm.log" 2>&1 &&
     [[ -s $W/metrics.prom ]]; then
    is "/metrics from test_metrics is valid exposition format" "$(python3 "$W/expo.py" "$W/metrics.prom")" ok
    sample_has() { grep -qF -- "$1" "$W/metrics.prom"; }
    check "/metrics sample has a histogram's +Inf bucket" \
      sample_has 'boxcar_job_duration_seconds_bucket{queue="default",le="+Inf"} 2'
    check "/metrics sample escapes \\, \" and newline in label values" \
      sample_has 'queue="we\"ird\\q\nx"'
  else
    not_ok "test_metrics ran and wrote a /metrics sample"; sed 's/^/# /' "$W/tm.log"
  fi
else
  skip "/metrics exposition format ($TM not built)"
fi
