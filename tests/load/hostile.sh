#!/usr/bin/env bash
# make load-hostile: hostile clients against one serve, on loopback,
# bounded in time. On a fresh database (foodsafe_load_hostile, dropped
# before and after) it loads the demo restaurant, creates UPLOAD_KEYS keys
# holding cleaning-task-pictures:write, a key for the MCP batches and a
# writer key (drive-files and areas), starts bin/foodsafe serve with a
# short FOODSAFE_UPLOAD_IDLE_TIMEOUT and its other defaults, and runs
# tests/load/hostile (bin/load-hostile): one attack after another, each
# measured alike (serve's peak RSS, GET /health/live every 100 ms, the
# database round trips serve made): stalled uploads and MCP batches;
# a download of blocks that look like net/http's own answers and 299 byte
# ranges; a /health/version flood beside a partner's reads; 60 hostile
# 1 MiB JSON bodies; 50 slow bodies with an unknown key; 400 random keys
# from an address over its budget; Content-Length with Transfer-Encoding
# and a key sent as an MCP tool name; unknown keys from random addresses
# of one IPv6 /64 and requests from 2,000 IPv4 addresses, both through a
# proxy serve trusts (127.0.0.9); one address holding every connection;
# 2 MiB bodies sent whole before their 413 is read; 8 keys trickling
# uploads into every upload slot beside another device's upload; one key
# uploading past its daily quota (FOODSAFE_UPLOAD_QUOTA_BYTES, 50 MiB
# here); 100 users records of 1 MiB asked for in pages of 100 (not read,
# walked, HEADed, over MCP); an idle connection. It checks each
# attack's bounds (see the driver), then stops serve with SIGTERM (which
# flushes the audit trail) and checks the audit trail: every request of
# the uploads phase's keys recorded (one row each, or counted by shape),
# the random keys at most 60 rows, the key's secret in no row, and at most
# 100 audit_counts rows in any minute (the addresses attack). Exits 1
# when a check fails.
#
# Usage: make load-hostile [UPLOADS=250] [BATCHES=4] [CALLS=1000] [UPLOAD_KEYS=10]
#        [IDLE=5s] [ADDR=127.0.0.1:30100] [OPS_ADDR=127.0.0.1:30101]
#        [HOSTILE_DB=foodsafe_load_hostile] (BIN=path: another build of foodsafe, same driver)
#        [ONLY=word: only the attacks whose name holds it, no audit checks] [FLOOD_PATH=/health/version]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin/foodsafe}
DRIVER=${DRIVER:-bin/load-hostile}
UPLOADS=${UPLOADS:-250}
BATCHES=${BATCHES:-4}
CALLS=${CALLS:-1000}
UPLOAD_KEYS=${UPLOAD_KEYS:-10}
IDLE=${IDLE:-5s}
ADDR=${ADDR:-127.0.0.1:30100}
OPS_ADDR=${OPS_ADDR:-127.0.0.1:30101}
[ -x "$BIN" ] || { echo "$BIN is missing: run make build" >&2; exit 2; }
[ -x "$DRIVER" ] || { echo "$DRIVER is missing: run make load-hostile" >&2; exit 2; }
case "$ADDR $OPS_ADDR" in
  127.0.0.1:*\ 127.0.0.1:*) ;;
  *) echo "ADDR and OPS_ADDR must be loopback (127.0.0.1:port)" >&2; exit 2 ;;
esac

ADMIN_URL=${LOAD_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
DB=${HOSTILE_DB:-foodsafe_load_hostile}
export DATABASE_URL=${ADMIN_URL%%/postgres\?*}/$DB?sslmode=disable
work=$(mktemp -d)
serve_pid=
cleanup() {
  if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

PGOPTIONS=--client-min-messages=warning psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null
setup() { "$@" 2>>"$work/setup.log" || { echo "failed: $*" >&2; cat "$work/setup.log" >&2; exit 1; }; }
setup "$BIN" migrate --create-database >/dev/null
export FOODSAFE_CURSOR_KEY=load-hostile-cursor-key-0123456789abcdef FOODSAFE_URL_KEY=load-hostile-url-key-0123456789abcdef
export FOODSAFE_BLOB_DIR=$work/blobs
setup timeout 120 "$BIN" demo >"$work/demo-key"
MCP_KEY=$(cat "$work/demo-key")
for i in $(seq 1 "$UPLOAD_KEYS"); do
  setup "$BIN" keys create --name "load-hostile uploads $i" --grant demo-bistro=cleaning-task-pictures:write
done >"$work/upload-keys"
BATCH_KEY=$(setup "$BIN" keys create --name "load-hostile batches" --grant demo-bistro=temperature-records:read)
for i in $(seq 1 8); do
  setup "$BIN" keys create --name "load-hostile trickle $i" --grant demo-bistro=cleaning-task-pictures:write
done >"$work/trickle-keys"
QUOTA_KEY=$(setup "$BIN" keys create --name "load-hostile quota" --grant demo-bistro=drive-files:write)
WRITER_KEY=$(setup "$BIN" keys create --name "load-hostile writer" --grant demo-bistro=drive-files:write,drive-files:read,areas:write)
PARTNER_KEY=$(setup "$BIN" keys create --name "load-hostile partner" --grant demo-bistro=temperature-records:read)
BIG_KEY=$(setup "$BIN" keys create --name "load-hostile big records" --grant demo-bistro=users:write,users:read)

# 127.0.0.9 is the proxy of the ipv6 and addresses attacks: serve believes
# its X-Forwarded-For.
FOODSAFE_ADDR=$ADDR FOODSAFE_METRICS_ADDR=$OPS_ADDR FOODSAFE_LOG_LEVEL=warn FOODSAFE_UPLOAD_IDLE_TIMEOUT=$IDLE \
  FOODSAFE_UPLOAD_QUOTA_BYTES=52428800 FOODSAFE_MAINTENANCE_INTERVAL=0 FOODSAFE_TRUSTED_PROXIES=127.0.0.9 "$BIN" serve 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 1 100); do
  curl -fs --max-time 1 -o /dev/null "http://$ADDR/health/live" && break
  sleep 0.1
done
curl -fs --max-time 1 -o /dev/null "http://$ADDR/health/live" || { echo "serve did not start" >&2; cat "$work/serve.log" >&2; exit 1; }

status=0
timeout 600 "$DRIVER" -api "http://$ADDR" -ops "http://$OPS_ADDR" -pid "$serve_pid" -mcp-key "$MCP_KEY" \
  -batch-key "$BATCH_KEY" -writer-key "$WRITER_KEY" -partner-key "$PARTNER_KEY" -big-key "$BIG_KEY" -upload-keys "$work/upload-keys" \
  -trickle-keys "$work/trickle-keys" -quota-key "$QUOTA_KEY" \
  -upload-path "/v1/ingest/restaurants/demo-bistro/collections/cleaning-task-pictures/records/picture-003/asset?objectKey=cleaning%2Fpicture-003.png" \
  -batches "$BATCHES" -calls "$CALLS" -uploads "$UPLOADS" -deadline 120s -only "${ONLY:-}" \
  -flood-path "${FLOOD_PATH:-/health/version}" | tee "$work/driver.out" || status=1
sent=$(awk '$1 == "requests-sent" {print $2}' "$work/driver.out")
keys=$(awk '$1 == "audit-keys" {print $2}' "$work/driver.out" | sed "s/[^a-z0-9,]//g; s/,/','/g")

# SIGTERM: serve drains and flushes the audit buffer before it exits.
kill -TERM "$serve_pid"
timeout 30 tail --pid="$serve_pid" -f /dev/null || { echo "serve did not stop within 30s" >&2; status=1; }
wait "$serve_pid" 2>/dev/null || true
serve_pid=

[ -z "${ONLY:-}" ] || exit "$status"
q() { psql "$DATABASE_URL" -Atc "$1"; }
counts=$(q "SELECT to_regclass('audit_counts') IS NOT NULL")
printf '\n== audit trail (read after a graceful stop)\n'
check() { # check GOOD TEXT
  if [ "$1" = 1 ]; then printf '   ok   %s\n' "$2"; else printf '   FAIL %s\n' "$2"; status=1; fi
}
audited=$(q "SELECT count(*) FROM audit_events WHERE key_public_id IN ('$keys')")
limited=0 flood_rows=0 secret_rows=0
if [ "$counts" = t ]; then
  limited=$(q "SELECT coalesce(sum(requests), 0) FROM audit_counts WHERE key_public_id IN ('$keys')")
  flood_rows=$(q "SELECT count(*) FROM audit_counts WHERE route = '/v1/changes'")
  secret_rows=$(q "SELECT count(*) FROM audit_counts WHERE strpos(route || outcome || key_public_id || method, '${WRITER_KEY#*.}') > 0")
fi
flood_rows=$((flood_rows + $(q "SELECT count(*) FROM audit_events WHERE route = '/v1/changes'")))
secret_rows=$((secret_rows + $(q "SELECT count(*) FROM audit_events WHERE strpos(coalesce(outcome, '') || route || method || request_id ||
  coalesce(restaurant_id, '') || coalesce(key_public_id, ''), '${WRITER_KEY#*.}') > 0")))
[ -n "$sent" ] && [ $((audited + limited)) -eq "$sent" ] && good=1 || good=0
check "$good" "uploads phase: $audited rows and $limited requests counted by shape for ${sent:-?} requests sent by its keys"
[ "$flood_rows" -le 60 ] && good=1 || good=0
check "$good" "random keys: $flood_rows audit rows for the address's budget and the 400 random keys (at most 60)"
[ "$secret_rows" -eq 0 ] && good=1 || good=0
check "$good" "a key sent as an MCP tool name and as a method: its secret in $secret_rows audit rows"
if [ "$counts" = t ]; then
  busiest=$(q "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM audit_counts GROUP BY minute) m")
  addresses=$(q "SELECT count(*) || ' rows for ' || coalesce(sum(requests), 0) || ' requests' FROM audit_counts
    WHERE (route = '/v1/restaurants' AND outcome = 'missing') OR route = '(others)'")
  [ "$busiest" -le 100 ] && good=1 || good=0
  check "$good" "audit_counts: at most 100 rows in any minute ($busiest); the addresses attack's refusals: $addresses"
fi
q "SELECT route || ' ' || status || coalesce(' ' || outcome, '') || ': ' || count(*) FROM audit_events
  GROUP BY route, status, outcome ORDER BY 1" | sed 's/^/     events: /'
if [ "$counts" = t ]; then
  q "SELECT route || ' ' || status || ' ' || outcome || ': ' || sum(requests) || ' requests in ' || count(*) || ' rows' FROM audit_counts
    GROUP BY route, status, outcome ORDER BY 1" | sed 's/^/     counted: /'
fi
if grep -qiE 'panic|"level":"ERROR"' "$work/serve.log"; then
  echo "serve logged errors:" >&2; grep -iE 'panic|"level":"ERROR"' "$work/serve.log" | head -5 >&2; status=1
fi
exit "$status"
