#!/usr/bin/env bash
# Installs the reference implementation (DESIGN.md §2) into .reference/ at the
# repository root (git-ignored): exactly node-llama-cpp@3.22.1 and
# @node-llama-cpp/linux-x64@3.22.1 from the npm registry, without install
# scripts and without the optional GPU/ARM builds. The prebuilt libraries end
# up in .reference/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/,
# where internal/reference finds them.
#
# The tarballs are checked against sha512 integrity values pinned below. npm
# itself verifies every downloaded tarball against the integrity it records in
# .reference/package-lock.json; this script then requires the recorded values
# to equal the pinned ones, so no further network call is needed.
#
# Idempotent: if the install is present and verifies, it does nothing.
#
# Usage: scripts/install-reference.sh [--force] [--check-registry]
#   --force           reinstall even if a verified install is present
#   --check-registry  also compare `npm view <pkg>@<ver> dist.integrity`
#                     (one registry call per package) with the pinned values
set -euo pipefail

PKG_MAIN="node-llama-cpp"
PKG_BINS="@node-llama-cpp/linux-x64"
VERSION="3.22.1"
declare -A PINNED=(
  ["$PKG_MAIN"]="sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJJiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw=="
  ["$PKG_BINS"]="sha512-5uCCDNqWCNfaAm8aR/Uzxbo4HBpKgNF91kCHPepKhgMgV2OAmatoefbOlMihsqCiH2Od35E/eUHQCFbfRBJuOg=="
)

die() { echo "install-reference: ERROR: $*" >&2; exit 1; }
say() { echo "install-reference: $*" >&2; }

force=0
check_registry=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --check-registry) check_registry=1 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) die "unknown argument: $arg" ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REF="$ROOT/.reference"
BINS="$REF/node_modules/$PKG_BINS/bins/linux-x64"
REQUIRED_LIBS=(libggml-base.so libggml.v0.5.0.so libggml-cpu-haswell.so libllama.v0.5.0.so)

command -v node >/dev/null || die "node is not installed (needed by npm and to read package-lock.json)"
command -v npm >/dev/null || die "npm is not installed"

# verify prints nothing and returns 0 when .reference holds exactly the pinned
# packages; otherwise it prints the reasons and returns 1.
verify() {
  [ -f "$REF/package-lock.json" ] || { echo "no $REF/package-lock.json"; return 1; }
  local pkg
  for pkg in "$PKG_MAIN" "$PKG_BINS"; do
    PKG="$pkg" WANT_VERSION="$VERSION" WANT_INTEGRITY="${PINNED[$pkg]}" LOCK="$REF/package-lock.json" \
      INSTALLED="$REF/node_modules/$pkg/package.json" node -e '
        const fs = require("fs");
        const e = process.env;
        const lock = JSON.parse(fs.readFileSync(e.LOCK, "utf8"));
        const ent = (lock.packages || {})["node_modules/" + e.PKG];
        const bad = (m) => { console.log(e.PKG + ": " + m); process.exit(1); };
        if (!ent) bad("not in package-lock.json");
        if (ent.version !== e.WANT_VERSION) bad("lock version " + ent.version + ", want " + e.WANT_VERSION);
        if (ent.integrity !== e.WANT_INTEGRITY) bad("lock integrity " + ent.integrity + ", want pinned " + e.WANT_INTEGRITY);
        if (ent.resolved && !ent.resolved.startsWith("https://registry.npmjs.org/")) bad("resolved from " + ent.resolved);
        let inst;
        try { inst = JSON.parse(fs.readFileSync(e.INSTALLED, "utf8")); } catch (err) { bad("not installed: " + err.message); }
        if (inst.name !== e.PKG || inst.version !== e.WANT_VERSION) bad("installed " + inst.name + "@" + inst.version);
      ' || return 1
  done
  local lib
  for lib in "${REQUIRED_LIBS[@]}"; do
    [ -f "$BINS/$lib" ] || { echo "missing $BINS/$lib"; return 1; }
  done
  return 0
}

check_registry_integrity() {
  local pkg got
  for pkg in "$PKG_MAIN" "$PKG_BINS"; do
    got="$(npm view "$pkg@$VERSION" dist.integrity)" || die "npm view $pkg@$VERSION failed"
    [ "$got" = "${PINNED[$pkg]}" ] || die "registry reports $pkg@$VERSION dist.integrity $got, pinned ${PINNED[$pkg]}"
    say "registry integrity of $pkg@$VERSION matches the pinned value"
  done
}

if [ "$check_registry" = 1 ]; then
  check_registry_integrity
fi

if [ "$force" = 0 ] && reasons="$(verify)"; then
  say "already installed and verified: $BINS"
  exit 0
fi
[ "$force" = 1 ] || say "installing ($(echo "${reasons:-not installed}" | head -n1))"

mkdir -p "$REF"
# A fresh, private package.json; a stale lock or tree must not be reused.
rm -rf "$REF/node_modules" "$REF/package-lock.json"
cat >"$REF/package.json" <<'EOF'
{
  "name": "bankml-reference",
  "private": true,
  "description": "The reference llama.cpp for bankml's oracle tests (scripts/install-reference.sh). Not part of the product."
}
EOF

say "npm i $PKG_MAIN@$VERSION $PKG_BINS@$VERSION into $REF"
if ! NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm i -E --omit=optional --ignore-scripts --no-audit --no-fund \
    --prefix "$REF" "$PKG_MAIN@$VERSION" "$PKG_BINS@$VERSION" >&2; then
  die "npm install failed"
fi

if ! reasons="$(verify)"; then
  # Do not leave an unverified tree where internal/reference would find it.
  rm -rf "$REF/node_modules"
  die "verification failed after install (removed $REF/node_modules): $reasons"
fi
say "installed and verified: $BINS"
