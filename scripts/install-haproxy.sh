#!/usr/bin/env bash
# Installs HAProxy from Debian (package haproxy) for the multi-replica test
# (serve/clients/haproxy_linux_test.go): three bankml serve replicas behind
# one HAProxy with health checks and sticky routing by conversation. The test
# writes its own haproxy.cfg and runs haproxy itself in the foreground; no
# system service is started or needed.
#
# Idempotent: does nothing when haproxy is present. Needs root (apt-get)
# when it is not.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
if have haproxy; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# policy-rc.d 101 keeps the package from starting the system service.
policy=/usr/sbin/policy-rc.d
added=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && added=1
fi
trap '[ "$added" = 1 ] && rm -f "$policy"' EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends haproxy >/dev/null
have haproxy || { echo "install-haproxy: haproxy not found after installing the package" >&2; exit 1; }
