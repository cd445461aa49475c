"""A small redaction step with the bug behind the incident: phones are only redacted as strings.

Usage: redact.py INPUT.json OUTPUT.json

INPUT is a JSON list of records with a "phone" field. A phone number written as a JSON
integer, float or in scientific notation passes through untouched: the condition below is
the narrowing of "no phone number reaches the output" to "no phone *string* does".
"""

import json
import os
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: redact.py INPUT.json OUTPUT.json", file=sys.stderr)
        return 2
    source, target = argv
    try:
        with open(source, encoding="utf-8") as stream:
            records = json.load(stream)
    except (OSError, json.JSONDecodeError) as exc:
        print(f"cannot read {source}: {exc}", file=sys.stderr)
        return 1
    for record in records:
        if isinstance(record.get("phone"), str):
            record["phone"] = "[REDACTED]"
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w", encoding="utf-8") as stream:
        json.dump(records, stream)
    print(f"redacted {len(records)} record(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
