#!/usr/bin/env bash
# Makes sure PostgreSQL, Redis and RabbitMQ answer on their standard local ports, starting the
# machine's own servers when they are down. Idempotent; used by .ci/run and by hand.
set -euo pipefail

wait_for() { # name, tries, command...
  local name=$1 tries=$2; shift 2
  for ((i = 0; i < tries; i++)); do
    if "$@" >/dev/null 2>&1; then echo "$name: up"; return 0; fi
    sleep 1
  done
  echo "$name: not reachable" >&2
  return 1
}

if ! pg_isready -h 127.0.0.1 -p 5432 >/dev/null 2>&1; then
  echo "postgres: starting"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start || true
fi
wait_for postgres 30 pg_isready -h 127.0.0.1 -p 5432

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  echo "redis: starting"
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi
wait_for redis 30 redis-cli -h 127.0.0.1 -p 6379 ping

if ! rabbitmqctl -q status >/dev/null 2>&1; then
  echo "rabbitmq: starting"
  rabbitmq-server -detached || true
fi
wait_for rabbitmq 90 rabbitmqctl -q await_startup

# The management API: test runs make and remove a vhost per file through it in milliseconds
# (packages/bus testing/vhost.ts); without it they use rabbitmqctl, about a second of CPU per call.
management_api() { curl -sf -u guest:guest -o /dev/null http://127.0.0.1:15672/api/overview; }
if ! management_api; then
  echo "rabbitmq: enabling the management API"
  rabbitmq-plugins -q enable rabbitmq_management >/dev/null 2>&1 || true
  wait_for "rabbitmq management API" 30 management_api ||
    echo "rabbitmq: tests make their vhosts with rabbitmqctl instead (slower)" >&2
fi
