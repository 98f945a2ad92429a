"""The spec TypedDicts against docs/job-spec.schema.json: every object of
the schema has its TypedDict with the same keys, the same required keys,
and the same enums; and no TypedDict names an object the schema lacks."""

import json
import os
import typing

from boxcar_client import spec as S

import tap

ROOT = os.environ.get("BOXCAR_ROOT") or os.path.join(os.path.dirname(__file__), "..", "..", "..")


def objects(node, path=""):
    """(path, schema) of every object schema with properties."""
    if not isinstance(node, dict):
        return
    if "properties" in node:
        yield path, node
        for k, v in node["properties"].items():
            yield from objects(v, (path + "." if path else "") + k)
    if isinstance(node.get("items"), dict):
        yield from objects(node["items"], path + "[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from objects(node["additionalProperties"], path + "{}")
    for k in ("oneOf", "anyOf"):
        for sub in node.get(k, []):
            yield from objects(sub, path)


def enum_of(prop):
    if "enum" in prop:
        return set(prop["enum"])
    if "const" in prop:
        return {prop["const"]}
    if isinstance(prop.get("items"), dict) and "enum" in prop["items"]:
        return set(prop["items"]["enum"])
    for sub in prop.get("oneOf", []):
        if "enum" in sub:
            return set(sub["enum"])
    return None


def literals(tp):
    """Every Literal value inside a type annotation."""
    out = set()
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return set(typing.get_args(tp))
    for a in typing.get_args(tp):
        out |= literals(a)
    return out


def main():
    schema = json.load(open(os.path.join(ROOT, "docs", "job-spec.schema.json")))
    seen = set()
    for path, node in objects(schema):
        td = S.SCHEMA_TYPES.get(path)
        if not tap.ok(td is not None, "spec type for the schema's object %r" % (path or "(the spec)"),
                      "add a TypedDict to boxcar_client/spec.py and to SCHEMA_TYPES"):
            continue
        seen.add(path)
        hints = typing.get_type_hints(td, include_extras=False)
        tap.eq(sorted(hints), sorted(node["properties"]), "%s has the schema's keys" % td.__name__)
        tap.eq(sorted(td.__required_keys__), sorted(node.get("required", [])),
               "%s requires what the schema requires" % td.__name__)
        for k, prop in node["properties"].items():
            want = enum_of(prop)
            if want is not None and k in hints:
                tap.eq(literals(hints[k]), want, "%s.%s allows the schema's values" % (td.__name__, k))
    tap.eq(sorted(set(S.SCHEMA_TYPES) - seen), [], "every spec type maps to an object of the schema")


if __name__ == "__main__":
    main()
    tap.done()
