#!/usr/bin/env bash
# The full test suite, as CI runs it: installs the reference (llama.cpp from
# npm, pinned and integrity-checked) so that every oracle test runs, MariaDB
# (the shared transparency log's tests run their own mariadbd) and Chromium
# (the console's browser test) and HAProxy (three replicas behind a load
# balancer), then runs all Go tests.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/install-reference.sh
scripts/install-mariadb.sh
scripts/install-chromium.sh
scripts/cross.sh
scripts/install-haproxy.sh
go test -count=1 -timeout 40m ./...
# deploy/ is its own module (ko, helm and kubeconform pinned as Go tools): the chart and image checks.
(cd deploy && go test -count=1 -timeout 40m ./...)
