#!/usr/bin/env bash
# Greets a name; refuses an empty one.
if [ -z "${1:-}" ]; then echo "error: name required" >&2; exit 2; fi
mkdir -p out
printf '{"greeted": "%s"}\\n' "$1" > out/result.json
echo "hello, $1"
