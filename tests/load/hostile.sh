#!/usr/bin/env bash
# make load-hostile: hostile clients against one serve, on loopback,
# bounded in time. On a fresh database (foodsafe_load_hostile, dropped
# before and after) it loads the demo restaurant, creates UPLOAD_KEYS keys
# holding cleaning-task-pictures:write, starts bin/foodsafe serve with a
# short FOODSAFE_UPLOAD_IDLE_TIMEOUT, and runs tests/load/hostile
# (bin/load-hostile): UPLOADS chunked uploads that send 5 bytes and stall,
# spread over the upload keys, and BATCHES MCP JSON-RPC batches of CALLS
# walk_records calls without MCP-Protocol-Version from the demo read key,
# all at once, while it samples serve's RSS (/proc/PID/status) and times
# GET /health/live every 100 ms. It checks the peak RSS (< 300 MB), every
# health answer (< 50 ms, 200), that each upload is answered 429/503 with
# Retry-After or cut by the idle timeout (400), each batch 400, and that
# the rate limiter counted every request of every key. Then it stops
# serve with SIGTERM (which flushes the audit trail) and checks that the
# audit trail holds one row per request sent. Exits 1 when a check fails.
#
# Usage: make load-hostile [UPLOADS=250] [BATCHES=4] [CALLS=1000] [UPLOAD_KEYS=10]
#        [IDLE=5s] [ADDR=127.0.0.1:30100] [OPS_ADDR=127.0.0.1:30101]
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
DB=foodsafe_load_hostile
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

FOODSAFE_ADDR=$ADDR FOODSAFE_METRICS_ADDR=$OPS_ADDR FOODSAFE_LOG_LEVEL=warn FOODSAFE_UPLOAD_IDLE_TIMEOUT=$IDLE \
  FOODSAFE_MAINTENANCE_INTERVAL=0 "$BIN" serve 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 1 100); do
  curl -fs --max-time 1 -o /dev/null "http://$ADDR/health/live" && break
  sleep 0.1
done
curl -fs --max-time 1 -o /dev/null "http://$ADDR/health/live" || { echo "serve did not start" >&2; cat "$work/serve.log" >&2; exit 1; }
since=$(psql "$DATABASE_URL" -Atc "SELECT now()")

status=0
timeout 90 "$DRIVER" -api "http://$ADDR" -ops "http://$OPS_ADDR" -pid "$serve_pid" -mcp-key "$MCP_KEY" \
  -upload-keys "$work/upload-keys" \
  -upload-path "/v1/ingest/restaurants/demo-bistro/collections/cleaning-task-pictures/records/picture-003/asset?objectKey=cleaning%2Fpicture-003.png" \
  -batches "$BATCHES" -calls "$CALLS" -uploads "$UPLOADS" -deadline 60s | tee "$work/driver.out" || status=1
sent=$(awk '$1 == "requests-sent" {print $2}' "$work/driver.out")

# SIGTERM: serve drains and flushes the audit buffer before it exits.
kill -TERM "$serve_pid"
timeout 30 tail --pid="$serve_pid" -f /dev/null || { echo "serve did not stop within 30s" >&2; status=1; }
wait "$serve_pid" 2>/dev/null || true
serve_pid=
audited=$(psql "$DATABASE_URL" -Atc "SELECT count(*) FROM audit_events WHERE occurred_at >= '$since' AND route NOT LIKE '/health%'")
ok=ok
[ -n "$sent" ] && [ "$audited" -eq "$sent" ] || { ok=FAIL; status=1; }
printf '%-44s %-34s %s\n' "audit rows / requests sent" "$audited / ${sent:-?}" "$ok"
psql "$DATABASE_URL" -Atc "SELECT route || ' ' || status || coalesce(' ' || outcome, '') || ': ' || count(*) FROM audit_events
  WHERE occurred_at >= '$since' AND route NOT LIKE '/health%' GROUP BY route, status, outcome ORDER BY 1" | sed 's/^/  audit: /'
if grep -qiE 'panic|"level":"ERROR"' "$work/serve.log"; then
  echo "serve logged errors:" >&2; grep -iE 'panic|"level":"ERROR"' "$work/serve.log" | head -5 >&2; status=1
fi
exit "$status"
