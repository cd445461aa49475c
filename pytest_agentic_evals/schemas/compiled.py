"""A compiled check for the subset of JSON Schema the shipped schemas use.

jsonschema walks a document through generic validator objects, which costs seconds on big
documents (a state graph of 50,000 transitions, thousands of fixtures in a skill tree). The
check compiled here is a plain predicate: true only for documents the schema accepts. It may
refuse a valid document (a float where an integer is due, say); callers then ask jsonschema,
which also explains what is wrong. It never accepts an invalid one: every keyword it knows is
implemented exactly or more strictly, and a keyword it does not know disables it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]
# ``format`` asserts nothing unless a format checker is asked for, and none is.
_ANNOTATIONS = frozenset({"description", "title", "$schema", "$id", "$defs", "default",
                          "examples", "format", "$comment"})
_TYPES: dict[str, Check] = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "boolean": lambda v: type(v) is bool,
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) in (int, float),
    "null": lambda v: v is None,
}
_GROUPS = {
    "object": ("properties", "patternProperties", "required", "additionalProperties",
               "propertyNames", "minProperties", "maxProperties"),
    "array": ("items", "prefixItems", "minItems", "maxItems", "uniqueItems"),
    "string": ("minLength", "maxLength", "pattern"),
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"),
}
_GROUPED = frozenset(key for keys in _GROUPS.values() for key in keys)


class _Unsupported(Exception):
    """A keyword the compiled check does not implement: use jsonschema alone."""


def compile_check(schema: Mapping[str, Any]) -> Check | None:
    """A predicate true only for documents ``schema`` accepts, or None when the schema uses a
    keyword this module does not implement."""
    try:
        return _compile(schema, schema.get("$defs", {}), {})
    except _Unsupported:
        return None


def _compile(schema: Any, defs: Mapping[str, Any], done: dict[str, Check]) -> Check:
    if schema is True:
        return lambda value: True
    if schema is False or not isinstance(schema, dict):
        return lambda value: False
    checks: list[Check] = []
    kind = schema.get("type")
    # A single type with keywords of its own group is checked by that group's function,
    # which then refuses other types itself: one call per value instead of two.
    folded: str | None = None
    group = "number" if kind == "integer" else kind
    if isinstance(group, str) and any(key in schema for key in _GROUPS.get(group, ())):
        folded = kind
    for key in schema:
        if key in _ANNOTATIONS or key in ("then", "else") or key in _GROUPED:
            continue
        if key == "$ref":
            checks.append(_compile_ref(schema["$ref"], defs, done))
        elif key == "type":
            if folded is None:
                names: list[Any] = kind if isinstance(kind, list) else [kind]
                if not all(name in _TYPES for name in names):
                    raise _Unsupported("type")
                kinds = [_TYPES[name] for name in names]
                checks.append(kinds[0] if len(kinds) == 1 else _any_of(kinds))
        elif key in ("const", "enum"):
            allowed = [schema["const"]] if key == "const" else list(schema["enum"])
            if not all(isinstance(item, (str, bool, int)) for item in allowed):
                raise _Unsupported(key)
            checks.append(_one_of(allowed))
        elif key == "if":
            condition = _compile(schema["if"], defs, done)
            then = _compile(schema.get("then", True), defs, done)
            otherwise = _compile(schema.get("else", True), defs, done)
            checks.append(_conditional(condition, then, otherwise))
        else:
            raise _Unsupported(key)
    if any(key in schema for key in _GROUPS["object"]):
        checks.append(_compile_object(schema, defs, done, strict=folded == "object"))
    if any(key in schema for key in _GROUPS["array"]):
        checks.append(_compile_array(schema, defs, done, strict=folded == "array"))
    if any(key in schema for key in _GROUPS["string"]):
        checks.append(_compile_string(schema, strict=folded == "string"))
    if any(key in schema for key in _GROUPS["number"]):
        checks.append(_compile_number(schema, strict=folded))
    if not checks:
        return lambda value: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)
    return lambda value: all(check(value) for check in checks)


def _any_of(kinds: list[Check]) -> Check:
    return lambda value: any(kind(value) for kind in kinds)


def _one_of(allowed: list[Any]) -> Check:
    # JSON's types: true is not 1, so the Python type must match too.
    return lambda value: any(type(value) is type(item) and value == item for item in allowed)


def _conditional(condition: Check, then: Check, otherwise: Check) -> Check:
    return lambda value: then(value) if condition(value) else otherwise(value)


def _compile_ref(reference: str, defs: Mapping[str, Any], done: dict[str, Check]) -> Check:
    if not reference.startswith("#/$defs/"):
        raise _Unsupported("$ref")
    name = reference.rsplit("/", 1)[1]
    if name not in done:
        done[name] = lambda value: False  # a recursive schema would need more; none is
        done[name] = _compile(defs[name], defs, done)
    return done[name]


def _compile_object(schema: Mapping[str, Any], defs: Mapping[str, Any],
                    done: dict[str, Check], strict: bool) -> Check:
    properties = {key: _compile(sub, defs, done)
                  for key, sub in schema.get("properties", {}).items()}
    patterns = [(re.compile(pattern).search, _compile(sub, defs, done))
                for pattern, sub in schema.get("patternProperties", {}).items()]
    required = tuple(schema.get("required", ()))
    additional = schema.get("additionalProperties", True)
    extra = None if additional is True else _compile(additional, defs, done)
    names = _compile(schema["propertyNames"], defs, done) if "propertyNames" in schema else None
    fewest = int(schema.get("minProperties", 0))
    most = schema.get("maxProperties")

    def check(value: Any) -> bool:
        if type(value) is not dict:
            return not strict
        if len(value) < fewest or (most is not None and len(value) > most):
            return False
        for key in required:
            if key not in value:
                return False
        for key, item in value.items():
            if names is not None and not names(key):
                return False
            known = properties.get(key)
            if known is not None and not known(item):
                return False
            matched = False
            for search, pattern_check in patterns:
                if search(key):
                    matched = True
                    if not pattern_check(item):
                        return False
            if known is None and not matched and extra is not None and not extra(item):
                return False
        return True

    return check


def _compile_array(schema: Mapping[str, Any], defs: Mapping[str, Any],
                   done: dict[str, Check], strict: bool) -> Check:
    items = _compile(schema["items"], defs, done) if "items" in schema else None
    prefix = [_compile(sub, defs, done) for sub in schema.get("prefixItems", ())]
    fewest = int(schema.get("minItems", 0))
    most = schema.get("maxItems")
    unique = bool(schema.get("uniqueItems", False))

    def check(value: Any) -> bool:
        if type(value) is not list:
            return not strict
        if len(value) < fewest or (most is not None and len(value) > most):
            return False
        for position, item_check in enumerate(prefix[:len(value)]):
            if not item_check(value[position]):
                return False
        if items is not None:
            for item in value[len(prefix):]:
                if not items(item):
                    return False
        # Only strings are compared: JSON's equality of other values is not Python's.
        return not unique or (all(type(item) is str for item in value)
                              and len(set(value)) == len(value))

    return check


def _compile_string(schema: Mapping[str, Any], strict: bool) -> Check:
    shortest = int(schema.get("minLength", 0))
    longest = schema.get("maxLength")
    pattern = re.compile(schema["pattern"]).search if "pattern" in schema else None

    def check(value: Any) -> bool:
        if type(value) is not str:
            return not strict
        # JSON Schema counts code points, as len() does.
        if len(value) < shortest or (longest is not None and len(value) > longest):
            return False
        return pattern is None or pattern(value) is not None

    return check


def _compile_number(schema: Mapping[str, Any], strict: str | None) -> Check:
    bounds: list[tuple[str, float]] = [(key, schema[key]) for key in _GROUPS["number"]
                                       if key in schema]
    if not all(type(bound) in (int, float) for _, bound in bounds):
        raise _Unsupported("numeric bound")
    is_kind = _TYPES[strict] if strict in ("integer", "number") else None

    def check(value: Any) -> bool:
        if type(value) not in (int, float):
            return is_kind is None
        if is_kind is not None and not is_kind(value):
            return False
        for key, bound in bounds:
            if ((key == "minimum" and value < bound) or (key == "maximum" and value > bound)
                    or (key == "exclusiveMinimum" and value <= bound)
                    or (key == "exclusiveMaximum" and value >= bound)):
                return False
        return True

    return check
