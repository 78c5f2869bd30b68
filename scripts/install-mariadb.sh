#!/usr/bin/env bash
# Installs MariaDB from Debian (mariadb-server: mariadbd and mariadb-install-db)
# for the shared-log tests of package ledger (the log's MySQL storage through
# tessera). The tests run their own mariadbd on a private data directory and
# port under a temporary directory; no system service is started or needed.
#
# Idempotent: does nothing when mariadbd and mariadb-install-db are present.
# Needs root (apt-get) when they are not.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
if have mariadbd && have mariadb-install-db; then
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
apt-get install -y -qq --no-install-recommends mariadb-server >/dev/null
have mariadbd || { echo "install-mariadb: mariadbd not found after installing mariadb-server" >&2; exit 1; }
