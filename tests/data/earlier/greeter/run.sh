#!/usr/bin/env bash
# A small skill: greets a name, refuses an empty one. GREETER_OLD_BUG brings back a fixed bug.
if [ -z "${1:-}" ]; then echo "error: name required" >&2; exit 2; fi
if [ -n "${GREETER_OLD_BUG:-}" ]; then echo "hello, "; exit 0; fi
echo "hello, $1"
