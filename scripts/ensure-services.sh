#!/usr/bin/env bash
# Make sure what the test suite talks to is present and running: PostgreSQL (127.0.0.1:5432, trust auth,
# database "test"), Redis (127.0.0.1:6379) and Debian's Chromium. Installs from apt when missing (needs
# root or sudo), starts a stopped service, and waits until it answers. Idempotent; fast when all is up.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then $SUDO apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

wait_for() {  # wait_for NAME COMMAND...
  local name=$1; shift
  for _ in $(seq 1 60); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  echo "ensure-services: $name did not come up" >&2
  return 1
}

# --- Chromium (for the hosted-checkout browser tests) ---
if ! command -v chromium >/dev/null 2>&1; then
  echo "ensure-services: installing Debian's chromium" >&2
  apt_install chromium fonts-liberation
fi

# --- PostgreSQL ---
if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  echo "ensure-services: installing postgresql" >&2
  apt_install postgresql
fi
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  echo "ensure-services: starting postgresql" >&2
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  $SUDO pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_for postgresql pg_isready -q -h 127.0.0.1 -p 5432
fi
# Trust auth and a "test" database are what the suite expects; create them when a fresh install lacks them.
if ! psql -h 127.0.0.1 -U postgres -d test -c 'select 1' >/dev/null 2>&1; then
  echo "ensure-services: preparing the postgres role and the test database" >&2
  hba=$(ls /etc/postgresql/*/main/pg_hba.conf | sort -V | tail -n 1)
  if ! grep -q '^host all all 127.0.0.1/32 trust' "$hba"; then
    $SUDO sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\nlocal all all trust' "$hba"
    $SUDO su postgres -c "psql -c 'select pg_reload_conf()'" >/dev/null
  fi
  psql -h 127.0.0.1 -U postgres -c 'create database test' >/dev/null 2>&1 || true
fi

# --- Redis ---
if ! command -v redis-server >/dev/null 2>&1; then
  echo "ensure-services: installing redis" >&2
  apt_install redis-server
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  echo "ensure-services: starting redis" >&2
  $SUDO mkdir -p /var/lib/redis /var/log/redis
  $SUDO redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_for redis redis-cli -h 127.0.0.1 -p 6379 ping
fi
