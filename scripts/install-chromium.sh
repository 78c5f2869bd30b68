#!/usr/bin/env bash
# Installs Debian's chromium for the browser tests (driven headless from Go
# with chromedp). Idempotent: does nothing when chromium is on PATH.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null 2>&1 || { echo "install-chromium: chromium not found after installing it" >&2; exit 1; }
