#!/usr/bin/env bash
# Debian's chromium and chromedriver for the status page's test: installed
# from apt when missing (as root, as on CI), else the command to run is named.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >&2
    exit 0
fi
echo "the status page's test needs Debian's chromium and chromedriver: sudo apt-get install chromium chromium-driver" >&2
exit 1
