#!/usr/bin/env bash
# The Python and JavaScript controller toolchains, pinned, installed once
# into ~/.cache/wasmco-sdk (from PyPI and npm): prints componentize-py's
# path, then componentize-js's. The versions are the CLI's
# (host/wasmco/src/cli/languages.rs); a test checks they agree. ComponentizeJS
# and every package under it come from package-lock.json beside this script.
set -euo pipefail
componentize_py=0.25.1
componentize_js=0.23.0
root="${XDG_CACHE_HOME:-$HOME/.cache}/wasmco-sdk"
py="$root/componentize-py-$componentize_py"
here="$(cd "$(dirname "$0")" && pwd)"
# A new lock is a new install.
lock_sum=$(sha256sum "$here/package-lock.json" | cut -c1-12)
js="$root/componentize-js-$componentize_js-$lock_sum"
mkdir -p "$root"
# Tests run in parallel: one installs, the others wait for it.
exec 9>"$root/lock"
flock 9
if [ ! -e "$py/done" ]; then
    rm -rf "$py"
    python3 -m venv "$py" >&2
    "$py/bin/pip" install -q --disable-pip-version-check "componentize-py==$componentize_py" >&2
    touch "$py/done"
fi
if [ ! -e "$js/done" ]; then
    rm -rf "$js"
    mkdir -p "$js"
    cp "$here/package.json" "$here/package-lock.json" "$js/"
    (cd "$js" && npm ci --no-audit --no-fund --loglevel=error >&2)
    touch "$js/done"
fi
echo "$py/bin/componentize-py"
echo "$js/node_modules/.bin/componentize-js"
