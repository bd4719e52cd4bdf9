#!/usr/bin/env bash
# Runs every test airlock has, on a fresh machine too: installs and starts what the
# tests need when it is missing (PostgreSQL, Chromium and playwright-core for the
# browser tests, the official MCP Python SDK for the independent client test,
# systemd-analyze and promtool for the files under packaging/), then checks formatting,
# the docs' citations, commit subjects, the docs' numbers and lints, then runs all tests.
#
#   scripts/test.sh            everything
#   AIRLOCK_TEST_PG=postgres://user@host:port   use another PostgreSQL server
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

log() { printf '\n== %s\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif have sudo; then sudo "$@"; else "$@"; fi; }

apt_install() {
  log "installing $* (apt)"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || true
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

ensure_postgres() {
  export AIRLOCK_TEST_PG=${AIRLOCK_TEST_PG:-postgres://postgres@127.0.0.1:5432}
  if have pg_isready && pg_isready -q -d "$AIRLOCK_TEST_PG/postgres"; then return; fi
  log "PostgreSQL is not reachable at $AIRLOCK_TEST_PG; starting it"
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    apt_install postgresql postgresql-client
  fi
  local version
  version=$(ls /etc/postgresql | sort -V | tail -1)
  # Trust local TCP connections for the test user, as the tests expect.
  local hba=/etc/postgresql/$version/main/pg_hba.conf
  if ! grep -q "airlock-tests" "$hba" 2>/dev/null; then
    as_root sh -c "printf '%s\n' '# airlock-tests' 'host all all 127.0.0.1/32 trust' 'host all all ::1/128 trust' | cat - '$hba' > '$hba.new' && mv '$hba.new' '$hba'"
  fi
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || as_root pg_ctlcluster --skip-systemctl-redirect "$version" main restart
  for _ in $(seq 1 30); do
    pg_isready -q -d "$AIRLOCK_TEST_PG/postgres" && return
    sleep 1
  done
  echo "PostgreSQL did not come up at $AIRLOCK_TEST_PG" >&2
  exit 1
}

ensure_rust_tools() {
  have cargo || { echo "cargo is missing: install Rust with https://rustup.rs" >&2; exit 1; }
  rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt clippy >/dev/null 2>&1 || true
}

ensure_python_mcp() {
  # The independent MCP client test (crates/mcp/tests/python_client.py) runs the official
  # MCP Python SDK from .venv at the repository root.
  if [ -x .venv/bin/python ] && .venv/bin/python -c "import mcp" >/dev/null 2>&1; then return; fi
  log "installing the MCP Python SDK into .venv"
  local python
  python=$(command -v python3.11 || command -v python3 || true)
  if [ -z "$python" ] || ! "$python" -c "import venv, ensurepip" >/dev/null 2>&1; then
    apt_install python3 python3-venv
    python=/usr/bin/python3
  fi
  "$python" -m venv --clear .venv
  .venv/bin/pip install --quiet --disable-pip-version-check "mcp>=2,<3"
  .venv/bin/python -c "import mcp" || { echo "the MCP Python SDK did not install into .venv" >&2; exit 1; }
}

ensure_browser() {
  # The dashboard's browser test (crates/dashboard/tests/it/browser.rs) drives Debian's
  # Chromium with playwright-core from npm (never a browser download of its own).
  if [ ! -x /usr/bin/chromium ]; then
    apt_install chromium
  fi
  if ! have node || ! have npm; then
    apt_install nodejs npm
  fi
  local dir=crates/dashboard/tests/browser
  if [ ! -d "$dir/node_modules/playwright-core" ]; then
    log "installing playwright-core (npm ci in $dir)"
    (cd "$dir" && { npm ci --no-audit --no-fund --loglevel=error || npm install --no-audit --no-fund --loglevel=error; })
  fi
  [ -x /usr/bin/chromium ] && [ -d "$dir/node_modules/playwright-core" ] || {
    echo "the browser test needs /usr/bin/chromium and $dir/node_modules/playwright-core" >&2; exit 1; }
}

ensure_packaging_tools() {
  # crates/cli/tests/it/packaging.rs checks the systemd units with systemd-analyze
  # (Debian package systemd) and the alert rules with promtool (package prometheus;
  # without its recommends, and nothing is started).
  local missing=()
  have systemd-analyze || missing+=(systemd)
  have promtool || missing+=(prometheus)
  if [ ${#missing[@]} -gt 0 ]; then
    apt_install --no-install-recommends "${missing[@]}"
  fi
  have systemd-analyze && have promtool || {
    echo "the packaging tests need systemd-analyze and promtool" >&2; exit 1; }
}

ensure_rust_tools
ensure_postgres
ensure_python_mcp
ensure_browser
ensure_packaging_tools

log "cargo fmt --check"
cargo fmt --all -- --check

log "every document the code cites is in the repository"
scripts/check-docs.sh

log "commit subjects after the baseline are at most 72 characters"
scripts/check-commits.sh

log "docs and code agree on every number a doc states (docs/numbers.toml)"
cargo test -p airlock-tidy --quiet

log "cargo check without dev-dependencies (App::store stays private to front ends)"
cargo check --workspace

log "cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

log "rustdoc builds without warnings (the inventories ARCHITECTURE.md leaves to it)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

log "cargo test"
cargo test --workspace --no-fail-fast

log "all tests passed"
