#!/usr/bin/python3
"""Checks Kubernetes manifests against the API's schema, offline.

usage: k8s_schema.py FILE...   (multi-document YAML; '-' reads stdin)

The schema is the one Debian's python3-kubernetes was generated from (its
models' openapi_types and attribute_map: every field of every built-in
kind, with its type; its setters refuse None for the required fields).
For each object of a kind it knows, every field must exist where it is
written, hold the type the API says (a string, an integer, a list of
objects, a map of strings ...), and every required field must be there.
Kinds it does not know (CRDs: KEDA's, the Prometheus Operator's) are
reported as not checked, never passed silently.

python3-kubernetes 22.6 is the Kubernetes 1.22 API.  Fields added since
that these manifests use are in NEWER, each with the release that added it
and its own small schema, so that nothing goes unchecked.  Enumerations
are not in those models: ENUMS lists the allowed values (from the API
reference) of the fields these manifests set.

Prints one line per object ("ok KIND/NAME", "unchecked KIND/NAME: why",
"error KIND/NAME: path: problem") and exits 1 on any error.  Debian's
/usr/bin/python3 on purpose: that is where python3-kubernetes is.
"""
import re
import sys

import yaml
from kubernetes import client
from kubernetes.client import models

KINDS = {
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Secret"): "V1Secret",
    ("v1", "Service"): "V1Service",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("batch/v1", "Job"): "V1Job",
    ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget",
    ("networking.k8s.io/v1", "NetworkPolicy"): "V1NetworkPolicy",
}

# (model, json field) -> (release, schema).  A schema here is a dict of
# field -> (type, allowed values or None), with "required" listing fields.
NEWER = {
    ("V1SecurityContext", "appArmorProfile"): (
        "1.30",
        {"type": ("str", {"Localhost", "RuntimeDefault", "Unconfined"}),
         "localhostProfile": ("str", None),
         "required": ["type"]}),
    ("V1PodSecurityContext", "appArmorProfile"): (
        "1.30",
        {"type": ("str", {"Localhost", "RuntimeDefault", "Unconfined"}),
         "localhostProfile": ("str", None),
         "required": ["type"]}),
}

ENUMS = {
    ("V1SeccompProfile", "type"): {"Localhost", "RuntimeDefault", "Unconfined"},
    ("V1ContainerPort", "protocol"): {"TCP", "UDP", "SCTP"},
    ("V1ServicePort", "protocol"): {"TCP", "UDP", "SCTP"},
    ("V1NetworkPolicyPort", "protocol"): {"TCP", "UDP", "SCTP"},
    ("V1NetworkPolicySpec", "policyTypes"): {"Ingress", "Egress"},
    ("V1DeploymentStrategy", "type"): {"RollingUpdate", "Recreate"},
    ("V1PodSpec", "restartPolicy"): {"Always", "OnFailure", "Never"},
    ("V1Container", "imagePullPolicy"): {"Always", "IfNotPresent", "Never"},
    ("V1HostPathVolumeSource", "type"): {"", "DirectoryOrCreate", "Directory", "FileOrCreate",
                                         "File", "Socket", "CharDevice", "BlockDevice"},
    ("V1HTTPGetAction", "scheme"): {"HTTP", "HTTPS"},
    # The API takes any string here; the runtime refuses what it does not
    # know.  Kubernetes' own spelling: the kernel's names without CAP_.
    ("V1Capabilities", "add"): {
        "AUDIT_CONTROL", "AUDIT_READ", "AUDIT_WRITE", "BLOCK_SUSPEND", "BPF", "CHECKPOINT_RESTORE",
        "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "IPC_LOCK", "IPC_OWNER",
        "KILL", "LEASE", "LINUX_IMMUTABLE", "MAC_ADMIN", "MAC_OVERRIDE", "MKNOD", "NET_ADMIN",
        "NET_BIND_SERVICE", "NET_BROADCAST", "NET_RAW", "PERFMON", "SETFCAP", "SETGID", "SETPCAP",
        "SETUID", "SYSLOG", "SYS_ADMIN", "SYS_BOOT", "SYS_CHROOT", "SYS_MODULE", "SYS_NICE",
        "SYS_PACCT", "SYS_PTRACE", "SYS_RAWIO", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG",
        "WAKE_ALARM"},
    ("V1Capabilities", "drop"): {"ALL"},
}

# A quantity as the API parses it (resource.Quantity): number and suffix.
QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?$")


def required_fields(cls):
    """The json names of the fields whose setter refuses None."""
    cfg = client.Configuration()
    cfg.client_side_validation = True
    obj = cls.__new__(cls)
    obj.local_vars_configuration = cfg
    out = set()
    for attr in cls.openapi_types:
        try:
            setattr(obj, attr, None)
        except ValueError:
            out.add(cls.attribute_map[attr])
    return out


def check_value(value, typ, path, errs, owner=None, field=None):
    if typ.startswith("list["):
        if not isinstance(value, list):
            errs.append("%s: a list, not %r" % (path, value))
            return
        for i, v in enumerate(value):
            check_value(v, typ[5:-1], "%s[%d]" % (path, i), errs, owner, field)
        return
    m = re.fullmatch(r"dict\(str, (.*)\)", typ)
    if m:
        if not isinstance(value, dict):
            errs.append("%s: a map, not %r" % (path, value))
            return
        for k, v in value.items():
            if not isinstance(k, str):
                errs.append("%s: key %r is not a string" % (path, k))
            check_value(v, m.group(1), "%s.%s" % (path, k), errs)
            # resources' requests and limits are quantities
            if owner == "V1ResourceRequirements" and isinstance(v, str) and not QUANTITY.match(v):
                errs.append("%s.%s: %r is not a quantity" % (path, k, v))
        return
    if typ == "str":
        ok = isinstance(value, str)
    elif typ == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif typ == "bool":
        ok = isinstance(value, bool)
    elif typ == "float":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif typ == "datetime":
        ok = isinstance(value, str)
    elif typ == "object":
        # IntOrString (ports, maxUnavailable ...) and free-form fields.
        ok = isinstance(value, (str, int, dict, list)) and not isinstance(value, bool)
    else:
        check_model(value, typ, path, errs)
        return
    if not ok:
        errs.append("%s: %r is not of type %s" % (path, value, typ))
        return
    allowed = ENUMS.get((owner, field))
    if allowed is not None and value not in allowed:
        errs.append("%s: %r is not one of %s" % (path, value, ", ".join(sorted(allowed))))


def check_newer(value, release, schema, path, errs):
    if not isinstance(value, dict):
        errs.append("%s: an object, not %r (Kubernetes %s)" % (path, value, release))
        return
    for k, v in value.items():
        if k not in schema or k == "required":
            errs.append("%s: unknown field %r (Kubernetes %s)" % (path, k, release))
            continue
        typ, allowed = schema[k]
        if typ == "str" and not isinstance(v, str):
            errs.append("%s.%s: %r is not a string" % (path, k, v))
        elif allowed is not None and v not in allowed:
            errs.append("%s.%s: %r is not one of %s" % (path, k, v, ", ".join(sorted(allowed))))
    for k in schema.get("required", []):
        if k not in value:
            errs.append("%s: required field %r is missing (Kubernetes %s)" % (path, k, release))


def check_model(value, typ, path, errs):
    cls = getattr(models, typ, None)
    if cls is None:
        errs.append("%s: the schema has no type %s" % (path, typ))
        return
    if not isinstance(value, dict):
        errs.append("%s: an object (%s), not %r" % (path, typ, value))
        return
    by_json = {j: a for a, j in cls.attribute_map.items()}
    for k, v in value.items():
        p = "%s.%s" % (path, k) if path else k
        if (typ, k) in NEWER:
            release, schema = NEWER[(typ, k)]
            check_newer(v, release, schema, p, errs)
        elif k not in by_json:
            errs.append("%s: unknown field %r of %s" % (p, k, typ))
        elif v is None:
            errs.append("%s: empty (null) value" % p)
        else:
            check_value(v, cls.openapi_types[by_json[k]], p, errs, typ, k)
    for k in sorted(required_fields(cls) - set(value)):
        errs.append("%s: required field %r of %s is missing" % (path or "(top)", k, typ))


def main(paths):
    failed = False
    for path in paths:
        text = sys.stdin.read() if path == "-" else open(path).read()
        for doc in yaml.safe_load_all(text):
            if not doc:
                continue
            kind = doc.get("kind")
            name = "%s/%s" % (kind, (doc.get("metadata") or {}).get("name"))
            typ = KINDS.get((doc.get("apiVersion"), kind))
            if typ is None:
                print("unchecked %s: %s is not a built-in kind this schema has"
                      % (name, doc.get("apiVersion")))
                continue
            errs = []
            check_model(doc, typ, "", errs)
            if errs:
                failed = True
                for e in errs:
                    print("error %s: %s" % (name, e))
            else:
                print("ok %s" % name)
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__.split("\n\n")[1])
    sys.exit(main(sys.argv[1:]))
