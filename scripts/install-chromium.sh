#!/usr/bin/env bash
# Installs Debian's chromium (headless browser) for the tests that drive a real
# browser from Go with chromedp: serve's CORS and Host test
# (serve/browser_test.go) and the console's test (serve/console_test.go).
# Debian's package from the distribution's own archive (bookworm's security
# updates carry 156.x); no browser is downloaded from anywhere else.
#
# Idempotent: does nothing when /usr/bin/chromium exists. Needs root (apt-get);
# when not root and chromium is absent, it says so and exits 0, and the browser
# tests skip (failing under CI).
#
# Debian keeps only the current security build of chromium in its archive, so
# the version is not pinned: a pinned build would vanish with the next update.
set -euo pipefail

say() { echo "install-chromium: $*" >&2; }

if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  say "/usr/bin/chromium is absent and this is not root: not installed (the browser tests will skip)"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
lock=(-o DPkg::Lock::Timeout=600) # another install may hold dpkg's lock: wait for it
if ! apt-get "${lock[@]}" install -y -qq --no-install-recommends chromium >/dev/null 2>&1; then
  say "apt-get install failed with the current package lists; running apt-get update once"
  apt-get "${lock[@]}" update -qq
  apt-get "${lock[@]}" install -y -qq --no-install-recommends chromium >/dev/null
fi
[ -x /usr/bin/chromium ] || { say "/usr/bin/chromium not found after installing chromium"; exit 1; }
say "installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
