#!/usr/bin/env bash
# Runs parse.py with prometheus_client from PyPI, installed once per machine
# into ~/.cache/wasmco-py (outside the clone), pinned.
set -euo pipefail
version=0.26.0
target="$HOME/.cache/wasmco-py/prometheus-client-$version"
if [ ! -d "$target/prometheus_client" ]; then
	python3 -m pip install --quiet --disable-pip-version-check --target "$target.partial" \
		"prometheus-client==$version" >&2
	rm -rf "$target"
	mv "$target.partial" "$target"
fi
PYTHONPATH="$target" exec python3 "$(dirname "$0")/parse.py"
