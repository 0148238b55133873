#!/usr/bin/env python3
"""Check JSON documents against the project's JSON Schema files (the subset they use: type,
const, enum, required, properties, items, minItems, maxItems, minimum, maximum, minLength,
maxLength). Keeps docs/schema/ true to what the code writes and reads. Standard library only.

usage: schema_check.py SCHEMA DOC...   exit 1 and one line per problem when a document fails
"""
import json
import sys

TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def type_ok(v, t):
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool) or (isinstance(v, float) and v.is_integer())
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, TYPES[t])


def check(v, s, path, errors):
    if "const" in s and v != s["const"]:
        errors.append(f"{path}: expected {s['const']!r}, got {v!r}")
    if "enum" in s and v not in s["enum"]:
        errors.append(f"{path}: {v!r} not in {s['enum']}")
    if "type" in s:
        types = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(type_ok(v, t) for t in types):
            errors.append(f"{path}: expected {s['type']}, got {type(v).__name__}")
            return
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if "minimum" in s and v < s["minimum"]:
            errors.append(f"{path}: {v} < minimum {s['minimum']}")
        if "maximum" in s and v > s["maximum"]:
            errors.append(f"{path}: {v} > maximum {s['maximum']}")
    if isinstance(v, str):
        if len(v) < s.get("minLength", 0) or len(v) > s.get("maxLength", 1 << 62):
            errors.append(f"{path}: string length {len(v)} out of range")
    if isinstance(v, dict):
        for k in s.get("required", []):
            if k not in v:
                errors.append(f"{path}: missing required {k}")
        for k, sub in s.get("properties", {}).items():
            if k in v:
                check(v[k], sub, f"{path}.{k}", errors)
    if isinstance(v, list):
        if len(v) < s.get("minItems", 0) or len(v) > s.get("maxItems", 1 << 62):
            errors.append(f"{path}: {len(v)} items out of range")
        for i, item in enumerate(v):
            if "items" in s:
                check(item, s["items"], f"{path}[{i}]", errors)


def main():
    schema = json.load(open(sys.argv[1]))
    errors = []
    for doc in sys.argv[2:]:
        check(json.load(open(doc)), schema, doc, errors)
    for e in errors[:50]:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
