#!/usr/bin/env bash
# make bench-http: what the service costs over the SQL it runs. On a fresh
# database (foodsafe_bench_http, dropped first) it seeds one restaurant
# with 100,000 areas records, 10,000 deliveries and a drive file, VACUUMs
# and ANALYZEs, starts bin/foodsafe serve (rate limit raised, metrics on as
# in production) and, for each request, runs wrk against the service and
# pgbench -M prepared against the same database with the very statements
# one request executes (the statement text is taken from sql/queries, so
# it cannot drift), both with the same connection count and duration, in
# the same run. Prints req/s, p50 and p99 of the service, the tps of the
# request's statements (key lookup + data) and of the data statement
# alone, and the ratio of the service to each. Then the peak RSS of serve.
# With the key cache on (the default), a read request runs only its data
# statement once its key is cached, so "data alone" compares like with
# like; the key-lookup-plus-data column is what each request ran before
# the cache, and the statement /v1/restaurants is measured against.
#
# Each read is also served by tests/load/bare (bin/bench-bare): net/http
# and pgx alone, running the same data statement on a pool as large as
# serve's, with serve's GOGC, and writing the body the service answered,
# with nothing of the service on top. Its ratio is as close as the
# service's stack can come to the statement on this machine; the last
# column, × bare, is the service's req/s over the bare stack's.
#
# serve's pool has CONNECTIONS PostgreSQL connections, as many as pgbench's
# clients on the reads, so both run as many statements at once (ingest's 8
# writers use 8 of them).
#
# Usage: make bench-http [DURATION=10s] [CONNECTIONS=16] [POOL=n|default]
#   [BENCH_ROWS="words"] [BENCH_DB=name] [BENCH_WIDEST=bytes] [ENCODING=gzip|zstd]
# BENCH_ROWS runs only the rows whose label contains one of the words
# (e.g. BENCH_ROWS="deliveries walk" or BENCH_ROWS=ingest, or
# BENCH_ROWS=batch for batch ingest alone); default all.
# BENCH_DB names the database (default foodsafe_bench_http, dropped
# first), so two runs on one server do not drop each other's.
# BENCH_WIDEST=bytes records every stream's largest record as that size
# instead of its own (the rows stay small): with a size whose 101 rows
# could reach the 4 MiB page bound (say 100000), the walks take the path
# of a stream that holds a large record. In a checkout that has summed
# walk statements, the service reads such a stream's pages with them
# (after the plain one declines its first page, which teaches the server
# that the stream needs them), so pgbench and the bare stack run the
# summed statement as the walks' data statement.
# ENCODING makes every request accept that coding (Accept-Encoding), as
# browsers and most HTTP clients do: answers above the compression
# threshold come compressed (the bare stack never compresses). Without
# it, wrk asks for none, and nothing is compressed.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/load/common.sh
BIN=${BIN:-bin/foodsafe}
BARE=${BARE:-bin/bench-bare}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-16}
THREADS=2
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 2; }
command -v pgbench >/dev/null || { echo "pgbench is not installed (apt-get install postgresql-client)" >&2; exit 2; }
[ -x "$BIN" ] || { echo "$BIN is missing: run make build" >&2; exit 2; }
[ -x "$BARE" ] || { echo "$BARE is missing: run make bench-http" >&2; exit 2; }

ADMIN_URL=${BENCH_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
BENCH_DB=${BENCH_DB:-foodsafe_bench_http}
[ -z "${BENCH_WIDEST:-}" ] || [[ $BENCH_WIDEST =~ ^[1-9][0-9]{0,17}$ ]] || { echo "BENCH_WIDEST must be a positive number of bytes" >&2; exit 2; }
[[ $BENCH_DB =~ ^[a-z_][a-z0-9_]*$ ]] || { echo "BENCH_DB must be a plain lower-case name" >&2; exit 2; }
export DATABASE_URL=${ADMIN_URL%%/postgres\?*}/$BENCH_DB?sslmode=disable
psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS $BENCH_DB WITH (FORCE)" >/dev/null
"$BIN" migrate --create-database >/dev/null
for r in r1 r2 r3 r4 r5 r6 r7 r8; do "$BIN" restaurants add "$r" 2>/dev/null; done
KEY=$("$BIN" keys create --name bench --grant r1=areas:read,areas:write,deliveries:read,drive-files:read \
  $(for r in r2 r3 r4 r5 r6 r7 r8; do printf -- '--grant %s=areas:write ' "$r"; done) 2>/dev/null)
PUBLIC=${KEY#fsk_}; PUBLIC=${PUBLIC%%.*}
N=100000
psql "$DATABASE_URL" -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
UPDATE restaurants SET enabled_at = '2020-01-01';
INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data, captured_at,
                            received_at, payload_version, request_sha256)
SELECT 'r1', 'areas', i, 'area-' || i, 'seed-' || i, false,
       ('{"name":"Area ' || i || '","isDeleted":false}')::json, 1700000000000, 1700000000000, 1, sha256(i::text::bytea)
FROM generate_series(1, $N) i;
-- The records the update rows write to, in every stream (r1 has them above).
INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data, captured_at,
                            received_at, payload_version, request_sha256)
SELECT 'r' || s, 'areas', i, 'area-' || i, 'seed-r' || s || '-' || i, false,
       ('{"name":"Area ' || i || '","isDeleted":false}')::json, 1700000000000, 1700000000000, 1, sha256(i::text::bytea)
FROM generate_series(2, 8) s, generate_series(1, 5000) i;
INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at, received_at, payload_version)
SELECT restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at, received_at, payload_version
FROM record_changes;
INSERT INTO collection_streams VALUES ('r1', 'areas', $N);
INSERT INTO collection_streams SELECT 'r' || s, 'areas', 5000 FROM generate_series(2, 8) s;
INSERT INTO deliveries (restaurant_id, id, occurred_at, is_compliant, supplier_id, supplier_name, temperature_records,
                        non_compliance_reasons, corrective_actions, commentary, image_count, content_sha256, received_sequence)
SELECT 'r1', 'd' || lpad(g::text, 6, '0'), 1700000000000 + g * 60000, true, 's1', 'Supplier', '[]', '{}', '{}', NULL, 0,
       sha256(g::text::bytea), g
FROM generate_series(1, 10000) g;
INSERT INTO collection_streams VALUES ('r1', 'deliveries', 10000);
INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at, received_at, payload_version)
VALUES ('r1', 'drive-files', 'file-1', 1, 'seed-file-1', false,
        '{"s3Key":"plan.pdf","name":"Plan","sizeBytes":1,"asset":{"objectKey":"plan.pdf","status":"uploaded","contentType":"application/pdf","byteLength":1,"sha256":"$(printf 'ab%.0s' $(seq 32))"}}',
        1700000000000, 1700000000000, 1);
INSERT INTO collection_streams VALUES ('r1', 'drive-files', 1);
-- Each stream's largest record, as ingest keeps it (and migration 00042
-- fills it): the walks of small records skip their byte sum by it. A
-- binary from before 00042 (BIN=, to compare) has no such column.
DO \$\$ BEGIN
  IF EXISTS (SELECT 1 FROM information_schema.columns
             WHERE table_name = 'collection_streams' AND column_name = 'max_record_bytes') THEN
    UPDATE collection_streams s
    SET max_record_bytes = COALESCE(${BENCH_WIDEST:-NULL},
                                    (SELECT COALESCE(max(octet_length(r.data::text)), 0) FROM records r
                                     WHERE r.restaurant_id = s.restaurant_id AND r.collection = s.collection));
  END IF;
END \$\$;
INSERT INTO asset_uploads VALUES ('r1', 'drive-files', 'file-1', 'plan.pdf', '$(printf 'ab%.0s' $(seq 32))', 'application/pdf', 1, 1700000000000, 'seed-file-1');
INSERT INTO blobs VALUES ('$(printf 'ab%.0s' $(seq 32))', 1700000000000);
SQL
# VACUUM as well as ANALYZE: the first run over the seeded rows would
# otherwise also set their hint bits, for whichever side runs first.
psql "$DATABASE_URL" -qc "VACUUM ANALYZE" >/dev/null

work=$(mktemp -d)
pid=
barepid=
cleanup() {
  for p in $pid $barepid; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  [ -n "${BENCH_KEEP:-}" ] && echo "kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
# serve gets as many PostgreSQL connections as pgbench has clients
# (POOL=default keeps pgx's default, max(4, CPUs)).
pool=${POOL:-$CONNECTIONS}
serve_url=$DATABASE_URL
[ "$pool" = default ] || serve_url="$DATABASE_URL&pool_max_conns=$pool"
# BENCH_ADDR, BENCH_METRICS_ADDR, BENCH_BARE_ADDR: the listeners (default
# any free loopback port).
DATABASE_URL=$serve_url FOODSAFE_ADDR=${BENCH_ADDR:-127.0.0.1:0} FOODSAFE_METRICS_ADDR=${BENCH_METRICS_ADDR:-127.0.0.1:0} FOODSAFE_RATE_LIMIT=1000000000 FOODSAFE_LOG_LEVEL=warn \
  FOODSAFE_MAINTENANCE_INTERVAL=0 FOODSAFE_BLOB_DIR="$work/blobs" "$BIN" serve 2>"$work/serve.log" &
pid=$!
api=$(serve_api_addr "$pid" "$work/serve.log")
BASE=http://$api

# sql NAME: the statement of query NAME in sql/queries, comments dropped,
# sqlc.arg(x) and sqlc.narg(x) turned into pgbench variables :x.
sql() {
  awk -v name="$1" '
    $0 ~ "^-- name: " name " " { on = 1; next }
    on && /^-- name: / { exit }
    on && /^--/ { next }
    on { print; if ($0 ~ /;[[:space:]]*$/) exit }' sql/queries/*.sql |
    sed -E 's/sqlc\.n?arg\(([a-z0-9_]+)\)/:\1/g'
}
# The service's planner settings (store.PlannerSettings), for pgbench too.
export PGOPTIONS="-c enable_seqscan=off -c enable_bitmapscan=off"
# script FILE NAME... : a pgbench script of the named statements, one
# transaction each.
script() {
  local f=$1; shift
  : >"$f"
  for q in "$@"; do sql "$q" >>"$f"; done
}
# Every measurement starts from a checkpoint, so none pays for the dirty
# pages or the full-page writes of the one before it (ingest is sensitive).
checkpoint() { psql "$DATABASE_URL" -qc CHECKPOINT >/dev/null; }
pgtps() { # pgbench FILE VARS... -> tps
  local f=$1; shift
  checkpoint
  pgbench -n -M prepared -c "$CONNECTIONS" -j "$THREADS" -T "${DURATION%s}" "$@" -f "$f" "$DATABASE_URL" 2>&1 |
    awk '/^tps = / { printf "%.0f", $3 }'
}
# wrkrun PATH [LUA [-- ARGS]]: req/s p50_ms p99_ms non2xx db_us_per_request
# svc_us_per_request (serve's own CPU time per request, user plus system,
# from /proc: what the service itself spends on one)
wrkrun() {
  local path=$1 lua=() out n
  [ -n "${2:-}" ] && lua=(-s "$2")
  shift $(( $# < 2 ? $# : 2 ))
  checkpoint
  dbticks "$DATABASE_URL" "$work/ticks.before"
  proc_ticks "$pid" "$work/svc.before"
  local enc=()
  [ -n "${ENCODING:-}" ] && enc=(-H "Accept-Encoding: $ENCODING")
  out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -H "Authorization: Bearer $KEY" "${enc[@]}" "${lua[@]}" "$BASE$path" "$@" 2>&1)
  dbticks "$DATABASE_URL" "$work/ticks.after"
  proc_ticks "$pid" "$work/svc.after"
  n=$(echo "$out" | awk '/ requests in / { print $1 }')
  echo "$out" |
    awk -v db="$(dbus "$work/ticks.before" "$work/ticks.after" "${n:-0}")" \
      -v svc="$(dbus "$work/svc.before" "$work/svc.after" "${n:-0}")" \
      '/Requests\/sec/ { rps = $2 } /^ +50%/ { p50 = $2 } /^ +99%/ { p99 = $2 } /Non-2xx/ { bad = $5 }
      function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
      END { printf "%.0f %.2f %.2f %d %s %s\n", rps, ms(p50), ms(p99), bad, db, svc }'
}

# barerun DATA-SCRIPT PATH VARS...: sets br to the req/s of the bare stack
# running the data statement (its :x variables turned into $n parameters,
# given the values of the -D x=v VARS) on a pool as large as serve's, and
# answering the body the service answers to PATH. Called in this shell,
# not in $(...), so a failure stops the script and cleanup stops the
# server.
barerun() {
  local data=$1 path=$2 a=() v addr rps bad
  shift 2
  local -A val=()
  while [ $# -gt 0 ]; do
    if [ "$1" = -D ]; then val[${2%%=*}]=${2#*=}; shift 2; else shift; fi
  done
  # :x -> $n in order of first use (a :: cast is not a variable); the
  # variables' names, in that order, to stderr.
  perl -0pe 's/(?<!:):([a-z_][a-z0-9_]*)/exists $i{$1} ? "\$$i{$1}" : ($i{$1} = ++$n, push(@o, $1), "\$$n")/ge;
             END { print STDERR "$_\n" for @o }' "$data" >"$work/bare.sql" 2>"$work/bare.vars"
  while read -r v; do a+=(-arg "${val[$v]}"); done <"$work/bare.vars"
  curl -fs -H "Authorization: Bearer $KEY" "$BASE$path" >"$work/bare.body"
  [ -s "$work/bare.body" ] || { echo "the service answered $path with nothing" >&2; exit 1; }
  : >"$work/bare.addr" # the last row's address must not be read before the new one is written
  # serve's GOGC too (serve sets 400 unless GOGC is set).
  DATABASE_URL=$serve_url GOGC=${GOGC:-400} "$BARE" -addr "${BENCH_BARE_ADDR:-127.0.0.1:0}" -sql "$work/bare.sql" -body "$work/bare.body" "${a[@]}" >"$work/bare.addr" 2>"$work/bare.log" &
  barepid=$!
  for _ in $(seq 1 100); do addr=$(head -1 "$work/bare.addr"); [ -n "$addr" ] && break; sleep 0.1; done
  [ -n "$addr" ] || { echo "bench-bare did not start" >&2; cat "$work/bare.log" >&2; exit 1; }
  read -r rps _ _ bad _ < <(BASE=http://$addr wrkrun "$path")
  kill "$barepid"; wait "$barepid" 2>/dev/null || true; barepid=
  [ "${bad:-0}" = 0 ] && [ -n "$rps" ] || { echo "bench-bare failed on $path ($bad non-2xx)" >&2; cat "$work/bare.log" >&2; exit 1; }
  br=$rps
}

KEYVARS=(-D public_id="$PUBLIC")
# A page in the middle of the walk: its pin is the head, its position 50,000.
SEQ_MID=$((N / 2))
echo "serve's pool: $pool PostgreSQL connections; wrk and pgbench: $CONNECTIONS (8 for ingest); Accept-Encoding: ${ENCODING:-none}"
printf '%-42s %9s %8s %8s %9s %10s %22s %22s %22s %9s\n' request "req/s" "p50 ms" "p99 ms" "db us/req" "svc us/req" "key+data tps (ratio)" "data alone tps (ratio)" "bare stack (ratio)" "× bare"
# want LABEL: whether BENCH_ROWS selects the row.
want() {
  [ -z "${BENCH_ROWS:-}" ] && return 0
  local w
  for w in $BENCH_ROWS; do [[ $1 == *"$w"* ]] && return 0; done
  return 1
}
row() { # label path data-script key+data-script vars...
  local label=$1 path=$2 data=$3 both=$4; shift 4
  want "$label" || return 0
  read -r rps p50 p99 bad dbu svcu < <(wrkrun "$path")
  local tb td br
  tb=$(pgtps "$both" "${KEYVARS[@]}" "$@")
  if [ -n "$data" ]; then td=$(pgtps "$data" "$@"); fi
  # The bare stack runs the data statement (/v1/restaurants has none: its
  # answer comes from the cached key).
  if [ -n "$data" ]; then barerun "$data" "$path" "$@"; fi
  printf '%-42s %9s %8s %8s %9s %10s %13s (%5.2f) ' "$label" "$rps" "$p50" "$p99" "$dbu" "$svcu" "$tb" "$(echo "$rps / $tb" | bc -l)"
  if [ -n "$data" ]; then printf '%13s (%5.2f)' "$td" "$(echo "$rps / $td" | bc -l)"; else printf '%22s' "-"; fi
  # The bare stack's own ratio to the statement, then the service's to the bare stack.
  if [ -n "$data" ]; then printf ' %13s (%5.2f) %9.2f' "$br" "$(echo "$br / $td" | bc -l)" "$(echo "$rps / $br" | bc -l)"; else printf ' %22s %9s' "-" "-"; fi
  [ "${bad:-0}" != 0 ] && printf '  (%s non-2xx!)' "$bad"
  printf '\n'
}

script "$work/key.sql" KeyAuthLookup
row "/v1/restaurants (key lookup only)" /v1/restaurants "" "$work/key.sql"

script "$work/get.sql" RecordGet; script "$work/get+key.sql" KeyAuthLookup RecordGet
row "single record" /v1/restaurants/r1/collections/areas/records/area-777 "$work/get.sql" "$work/get+key.sql" \
  -D restaurant_id=r1 -D collection=areas -D record_id=area-777

# widen NAME DATA KEY+DATA: with BENCH_WIDEST, makes NAME's summed
# statement the data statement of the scripts, when this checkout has
# one: what a walk page of such a stream runs once the server knows it.
widen() {
  [ -n "${BENCH_WIDEST:-}" ] && grep -q "^-- name: ${1}Summed " sql/queries/records.sql || return 0
  script "$2" "${1}Summed"; script "$3" KeyAuthLookup "${1}Summed"
}
# max_bytes is serve's FOODSAFE_MAX_PAGE_BYTES (4 MiB): a page of small
# records never reaches it, and its statement reads the page unsummed
# (unless BENCH_WIDEST says a record could).
script "$work/walk1.sql" RecordWalkFirstPage; script "$work/walk1+key.sql" KeyAuthLookup RecordWalkFirstPage
widen RecordWalkFirstPage "$work/walk1.sql" "$work/walk1+key.sql"
row "walk, first page of 100" "/v1/restaurants/r1/collections/areas/records?limit=100" "$work/walk1.sql" "$work/walk1+key.sql" \
  -D restaurant_id=r1 -D collection=areas -D after_sequence=0 -D max_rows=101 -D max_bytes=4194304

# The middle page's cursor, from a walk the service itself started.
cursor=
want "walk, page 501" && cursor=$(curl -fs -H "Authorization: Bearer $KEY" "$BASE/v1/restaurants/r1/collections/areas/records?limit=100" | sed -E 's/.*"nextCursor":"([^"]+)".*/\1/')
[ -n "$cursor" ] && for _ in $(seq 1 499); do
  cursor=$(curl -fs -H "Authorization: Bearer $KEY" "$BASE/v1/restaurants/r1/collections/areas/records?limit=100&cursor=$cursor" |
    sed -E 's/.*"nextCursor":"([^"]+)".*/\1/')
done
script "$work/walkm.sql" RecordWalkPage; script "$work/walkm+key.sql" KeyAuthLookup RecordWalkPage
widen RecordWalkPage "$work/walkm.sql" "$work/walkm+key.sql"
row "walk, page 501 of 1,000 (limit 100)" "/v1/restaurants/r1/collections/areas/records?limit=100&cursor=$cursor" "$work/walkm.sql" "$work/walkm+key.sql" \
  -D restaurant_id=r1 -D collection=areas -D pinned="$N" -D after_sequence="$SEQ_MID" -D max_rows=101 -D max_bytes=4194304

script "$work/dl.sql" DeliveryListFirst; script "$work/dl+key.sql" KeyAuthLookup DeliveryListFirst
row "deliveries, first page of 50" "/v1/restaurants/r1/deliveries?from=1700000000000&to=1700600000000&limit=50" "$work/dl.sql" "$work/dl+key.sql" \
  -D restaurant_id=r1 -D from_ms=1700000000000 -D to_ms=1700600000000 -D max_rows=51

script "$work/al.sql" AssetListForRecord; script "$work/al+key.sql" KeyAuthLookup AssetListForRecord
row "asset list (one file, signed URL)" /v1/restaurants/r1/collections/drive-files/records/file-1/assets "$work/al.sql" "$work/al+key.sql" \
  -D restaurant_id=r1 -D collection=drive-files -D record_id=file-1

# Ingest: 8 writers (connections) into one stream (r1/areas) or spread over
# 8 streams (areas of r1..r8), every mutation id one never sent before
# (a repeated id is a replay, a lookup, not a write), in three kinds:
#   new      a new record per request;
#   update   a new change of one of the 5,000 records every stream has;
#   replay   the update run's mutation ids again, same bodies: idempotent
#            replays (labelled as such; never counted as ingest).
# Each against what ingest runs on plain PostgreSQL: the replay check
# (RecordChangeByMutation), then StreamNextSequence and RecordApplyChange
# in one pipeline, one implicit transaction (a replay: the check alone).
# Also against the same statements as one BEGIN ... COMMIT transaction, a
# round trip each, the shape ingest had before (the stream lock then
# spanned three round trips).
cat >"$work/ingest.lua" <<'LUA'
local n = 0
local threads = {}
function setup(thread) n = n + 1; thread:set("tid", n); table.insert(threads, thread) end
function init(args)
  streams = tonumber(args[1]); run = args[2]; mode = args[3]; count = 0
  limits = {}
  for i = 4, #args do limits[i - 3] = tonumber(args[i]) end
end
function request()
  count = count + 1
  local c = count
  -- A replay run cycles through the ids its update run sent.
  if mode == "replay" then c = (count - 1) % limits[tid] + 1 end
  local m = run .. "-w" .. tid .. "-" .. c
  local r = "r" .. (c % streams + 1)
  local rec = "new-" .. m
  if mode ~= "new" then rec = "area-" .. ((tid * 7919 + c * 104729) % 5000 + 1) end
  local body = '{"id":"' .. rec .. '","restaurantId":"' .. r .. '","mutationId":"' .. m ..
    '","payloadVersion":1,"capturedAt":"1700000000000","sourceVersion":null,"deleted":false,' ..
    '"data":{"name":"bench ' .. m .. '","isDeleted":false}}'
  return wrk.format("PUT", "/v1/ingest/restaurants/" .. r .. "/collections/areas/records/" .. rec .. "/mutations/" .. m,
    -- Headers given here replace wrk's -H ones: carry Authorization over.
    {["Content-Type"] = "application/json", ["Idempotency-Key"] = m, ["Authorization"] = wrk.headers["Authorization"]}, body)
end
-- How many ids each thread sent, for the replay run (less the last few,
-- which may not have been answered when the run stopped).
function done()
  local f = io.open(os.getenv("BENCH_COUNTS"), "w")
  for _, t in ipairs(threads) do f:write(math.max(1, t:get("count") - 100), " ") end
  f:close()
end
LUA
ingestsubst() { # record-id expression
  echo "s/:restaurant_id/('r' || :r)/g; s/:record_id/($1)/g; s/:mutation_id/('pg-' || :client_id || '-' || :m)/g; \
s/:collection/'areas'/g; s/:deleted/false/g; s/:data/json_build_object('name', 'x', 'isDeleted', false)/g; \
s/:captured_at/1700000000000/g; s/:received_at/1700000000000/g; s/:source_version/NULL::text/g; s/:payload_version/1/g; \
s/:request_sha256/'\\\\x00'::bytea/g"
}
ingestscript() { # pipelined|transaction|replay new|update
  local SUBST
  if [ "$2" = new ]; then SUBST=$(ingestsubst "'new-' || :client_id || '-' || :m"); else SUBST=$(ingestsubst "'area-' || :rec"); fi
  echo '\set r random(1, :streams)'
  echo '\set rec random(1, 5000)'
  echo '\set m random(1, 9000000000000000000)'
  case $1 in
    replay) sql RecordChangeByMutation | sed -E "$SUBST"; return ;;
    pipelined) sql RecordChangeByMutation | sed -E "$SUBST"; echo '\startpipeline' ;;
    *) echo 'BEGIN;'; sql RecordChangeByMutation | sed -E "$SUBST" ;;
  esac
  sql StreamNextSequence | sed -E "$SUBST"
  sql RecordApplyChange | sed -E "$SUBST"
  if [ "$1" = pipelined ]; then echo '\endpipeline'; else echo 'COMMIT;'; fi
}
for k in new update; do
  ingestscript pipelined $k >"$work/ingest-$k.sql"
  ingestscript transaction $k >"$work/ingest-tx-$k.sql"
done
# The replay check finds an id pgbench's update rows wrote.
ingestscript replay update | sed -E "s/\('pg-' \|\| :client_id \|\| '-' \|\| :m\)/('seed-' || :rec)/" >"$work/ingest-replay.sql"
txrows=()
ingestrow() { # label streams new|update|replay
  want "$1" || return 0
  if [ "$3" = replay ] && [ ! -s "$work/counts-$2" ]; then echo "$1: skipped (needs its updates row)"; return 0; fi
  local rps p50 p99 bad dbu svcu tb tt= limits=() run=run$RANDOM$RANDOM-s$2
  # A replay run sends its update run's ids again, as many as it sent.
  if [ "$3" = replay ]; then read -r -a limits <"$work/counts-$2" || true; run=$(cat "$work/run-$2"); fi
  read -r rps p50 p99 bad dbu svcu < <(BENCH_COUNTS=$work/counts-$2-$3 CONNECTIONS=8 wrkrun / "$work/ingest.lua" -- "$2" "$run" "$3" "${limits[@]}")
  if [ "$3" = update ]; then cp "$work/counts-$2-$3" "$work/counts-$2"; echo "$run" >"$work/run-$2"; fi
  if [ "$3" = replay ]; then
    tb=$(CONNECTIONS=8 pgtps "$work/ingest-replay.sql" -D streams=1)
  else
    tb=$(CONNECTIONS=8 pgtps "$work/ingest-$3.sql" -D streams="$2")
    tt=$(CONNECTIONS=8 pgtps "$work/ingest-tx-$3.sql" -D streams="$2")
  fi
  printf '%-42s %9s %8s %8s %9s %10s %13s (%5.2f) %22s' "$1" "$rps" "$p50" "$p99" "$dbu" "$svcu" "$tb" "$(echo "$rps / $tb" | bc -l)" "-"
  [ "${bad:-0}" != 0 ] && printf '  (%s non-2xx!)' "$bad"
  printf '\n'
  [ -n "${tt:-}" ] && txrows+=("$(printf '  %s: %s tps (service %.2f of it)' "$1" "$tt" "$(echo "$rps / $tt" | bc -l)")")
  return 0
}
for streams in 1 8; do
  label="8 writers, $([ $streams = 1 ] && echo one stream || echo 8 streams)"
  ingestrow "ingest, new records, $label" $streams new
  ingestrow "ingest, updates, $label" $streams update
  ingestrow "replays (not ingest), $label" $streams replay
done

# Batch ingest (POST .../batch): 8 writers, each sending batches of 500
# new records (every mutation id one never sent before) into one stream
# (r1/areas) or, batch by batch, over 8 (areas of r1..r8). items/s is the
# changes committed during wrk's run over its length; "answered" the items
# of the batches answered in it, each response read (a batch answered
# with an item not applied is reported). Against, in the same run, with 8
# clients:
#   apply pipeline   what the batch runs for each item, StreamNextSequence
#                    and RecordApplyChange in one pipeline, one implicit
#                    transaction, one round trip per item (pgbench 15 has
#                    no Sync inside a pipeline, so it cannot pipeline
#                    across items as the service does; the batch's one
#                    replay-check statement per 500 items is left out);
#   PUT pipeline     the single PUT's statements as in the ingest rows
#                    above (the replay check, then the same pipeline).
cat >"$work/batch.lua" <<'LUA'
local n = 0
local threads = {}
function setup(thread) n = n + 1; thread:set("tid", n); table.insert(threads, thread) end
function init(args)
  streams = tonumber(args[1]); run = args[2]; count = 0; ok = 0; bad = 0
end
function request()
  count = count + 1
  -- Two threads: each connection's first batch goes to a stream of its own.
  local r = "r" .. ((count * 2 + tid) % streams + 1)
  local items = {}
  for i = 1, 500 do
    local m = run .. "-w" .. tid .. "-" .. count .. "-" .. i
    items[i] = '{"collection":"areas","snapshot":{"id":"new-' .. m .. '","restaurantId":"' .. r .. '","mutationId":"' .. m ..
      '","payloadVersion":1,"capturedAt":"1700000000000","sourceVersion":null,"deleted":false,' ..
      '"data":{"name":"bench ' .. m .. '","isDeleted":false}}}'
  end
  return wrk.format("POST", "/v1/ingest/restaurants/" .. r .. "/batch",
    {["Content-Type"] = "application/json", ["Authorization"] = wrk.headers["Authorization"]},
    '{"items":[' .. table.concat(items, ",") .. ']}')
end
function response(status, headers, body)
  local _, applied = body:gsub('"status":200,"replayed":false', '')
  ok = ok + applied
  if status ~= 200 or applied ~= 500 then bad = bad + 1 end
end
function done()
  local f = io.open(os.getenv("BENCH_COUNTS"), "w")
  local o, b = 0, 0
  for _, t in ipairs(threads) do o = o + t:get("ok"); b = b + t:get("bad") end
  f:write(o, " ", b, "\n")
  f:close()
end
LUA
{
  SUBST=$(ingestsubst "'new-' || :client_id || '-' || :m")
  echo '\set r random(1, :streams)'
  echo '\set m random(1, 9000000000000000000)'
  echo '\startpipeline'
  sql StreamNextSequence | sed -E "$SUBST"
  sql RecordApplyChange | sed -E "$SUBST"
  echo '\endpipeline'
} >"$work/batch-apply.sql"
batchrows=()
# heads: the positions of every areas stream, summed: the changes
# committed so far.
heads() { psql "$DATABASE_URL" -Atc "SELECT coalesce(sum(last_sequence), 0) FROM collection_streams WHERE collection = 'areas'"; }
batchrow() { # label streams
  want "$1" || return 0
  local out s0 s1 t0 t1 ok bad ta tb p50 p99 ips
  checkpoint
  # items/s: the changes committed while wrk ran, over its wall time (a
  # batch takes seconds: the ones still running at the end count for what
  # they committed, so the rate does not hang on how many ended in time).
  s0=$(heads); t0=$(date +%s.%N)
  out=$(BENCH_COUNTS=$work/batch-counts wrk -t"$THREADS" -c8 -d"$DURATION" --timeout 120s --latency -H "Authorization: Bearer $KEY" \
    -s "$work/batch.lua" "$BASE/" -- "$2" "batch$RANDOM$RANDOM-s$2" 2>&1)
  t1=$(date +%s.%N); s1=$(heads)
  read -r p50 p99 < <(echo "$out" | awk 'function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /^ +50%/ { p50 = ms($2) } /^ +99%/ { p99 = ms($2) } END { printf "%.0f %.0f\n", p50, p99 }')
  read -r ok bad <"$work/batch-counts"
  ips=$(echo "($s1 - $s0) / ($t1 - $t0)" | bc -l)
  ta=$(CONNECTIONS=8 pgtps "$work/batch-apply.sql" -D streams="$2")
  tb=$(CONNECTIONS=8 pgtps "$work/ingest-new.sql" -D streams="$2")
  local line
  line=$(printf '%-42s %9.0f %8s %8s %13s (%5.2f) %13s (%5.2f) %9s' "$1" "$ips" "$p50" "$p99" "$ta" "$(echo "$ips / $ta" | bc -l)" \
    "$tb" "$(echo "$ips / $tb" | bc -l)" "$ok")
  if [ "${bad:-0}" != 0 ]; then line="$line  ($bad batches not wholly applied!)"; fi
  batchrows+=("$line")
}
for streams in 1 8; do
  batchrow "batch ingest, 500 a request, 8 writers, $([ $streams = 1 ] && echo one stream || echo 8 streams)" $streams
done
if [ ${#batchrows[@]} -gt 0 ]; then
  printf '%-42s %9s %8s %8s %22s %22s %9s\n' "batch ingest" "items/s" "p50 ms" "p99 ms" "apply pipeline (ratio)" "PUT pipeline (ratio)" "answered"
  printf '%s\n' "${batchrows[@]}"
fi

echo "ingest's statements as one BEGIN ... COMMIT transaction, a round trip each:"
printf '%s\n' "${txrows[@]}"

rss=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status")
echo "peak RSS of serve over the run: ${rss} MiB"
