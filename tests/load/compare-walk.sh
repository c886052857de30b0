#!/usr/bin/env bash
# make compare-walk OLD=path/to/old/foodsafe: a walk page of 100 records
# and its data statement, on two binaries, each on its own database
# (foodsafe_cmp_old, foodsafe_cmp_new, dropped first and at the end) seeded
# with the same 100,000 temperature-records records, in ROUNDS rounds that
# alternate which side goes first: wrk against each serve (CONNECTIONS
# connections, DURATION), then pgbench -M prepared with the statement
# each side runs for a first page (from sql/queries: OLD_STATEMENT, default
# RecordWalkPage with no pin, on the old; RecordWalkFirstPage on the new),
# then pgbench with the plainest page of the same rows (one range scan of
# records_walk_idx, LIMIT 100, the walk's columns, nothing else) on both:
# the most the column type alone changes in a statement reading these rows.
# Prints every run, then each side's range and the new/old of the means,
# the CPU per walk request of each side's serve and database backends
# (from /proc, over each wrk run), then the new/old of each round
# (adjacent runs): range and median.
#
# Usage: make compare-walk OLD=bin/foodsafe-old [NEW=bin/foodsafe] [ROUNDS=3] [DURATION=10s] [OLD_STATEMENT=RecordWalkPage]
# (ADDR_OLD, ADDR_NEW, METRICS_OLD, METRICS_NEW: the listeners, default
# 127.0.0.1:0, any free port).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/load/common.sh
OLD=${OLD:?OLD=path of the old binary}
NEW=${NEW:-bin/foodsafe}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-16}
N=100000
ADMIN_URL=${BENCH_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
url() { echo "${ADMIN_URL%%/postgres\?*}/foodsafe_cmp_$1?sslmode=disable"; }
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  for s in old new; do psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS foodsafe_cmp_$s WITH (FORCE)" >/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

declare -A base key spid
for s in old new; do
  bin=$OLD; [ $s = new ] && bin=$NEW
  u=$(url $s)
  psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS foodsafe_cmp_$s WITH (FORCE)" >/dev/null
  DATABASE_URL=$u "$bin" migrate --create-database >/dev/null 2>&1
  DATABASE_URL=$u "$bin" restaurants add r1 >/dev/null 2>&1
  key[$s]=$(DATABASE_URL=$u "$bin" keys create --name cmp --grant r1=temperature-records:read 2>/dev/null)
  # The same text in both: compact, as the new binary stores what it
  # receives (a jsonb column keeps its own form of it).
  psql "$u" -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
UPDATE restaurants SET enabled_at = '2020-01-01';
INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at, received_at, payload_version)
SELECT 'r1', 'temperature-records', 't-' || i, i, 'seed-' || i, false,
       ('{"timestamp":"' || (1700000000000 + i) || '","value":' || (3.5 + (i % 70) / 10.0)::numeric(4,1) ||
        ',"unit":"°C","shift":"MORNING","equipmentId":"fridge-' || (i % 40) || '","correctiveActions":null,"userId":"user-' || (i % 12) || '"}')::json,
       1700000000000 + i, 1700000000000 + i, 1
FROM generate_series(1, $N) i;
INSERT INTO collection_streams VALUES ('r1', 'temperature-records', $N);
-- The stream's largest record, as ingest keeps it since migration 00042
-- (a binary before it has no such column).
DO \$\$ BEGIN
  IF EXISTS (SELECT 1 FROM information_schema.columns
             WHERE table_name = 'collection_streams' AND column_name = 'max_record_bytes') THEN
    UPDATE collection_streams SET max_record_bytes = (SELECT max(octet_length(data::text)) FROM records);
  END IF;
END \$\$;
SQL
  psql "$u" -qc "VACUUM ANALYZE" >/dev/null
  addr=ADDR_${s^^} maddr=METRICS_${s^^}
  DATABASE_URL="$u&pool_max_conns=$CONNECTIONS" FOODSAFE_ADDR=${!addr:-127.0.0.1:0} FOODSAFE_METRICS_ADDR=${!maddr:-127.0.0.1:0} FOODSAFE_RATE_LIMIT=1000000000 \
    FOODSAFE_LOG_LEVEL=warn FOODSAFE_MAINTENANCE_INTERVAL=0 FOODSAFE_BLOB_DIR="$work/blobs-$s" "$bin" serve 2>"$work/serve-$s.log" &
  pid=$!; pids+=("$pid"); spid[$s]=$pid
  a=$(serve_api_addr "$pid" "$work/serve-$s.log")
  base[$s]=http://$a
done
PATH_WALK=/v1/restaurants/r1/collections/temperature-records/records?limit=100
cmp -s <(curl -fs -H "Authorization: Bearer ${key[old]}" "${base[old]}$PATH_WALK" | jq -S '.data|map(.data)') \
       <(curl -fs -H "Authorization: Bearer ${key[new]}" "${base[new]}$PATH_WALK" | jq -S '.data|map(.data)') ||
  { echo "the two sides answer different records" >&2; exit 1; }
# Each side's statement for a first page: the old binary's (OLD_STATEMENT,
# RecordWalkPage with no pin: what binaries before RecordWalkFirstPage ran)
# and this one's.
statement() {
  awk -v name="$1" '$0 ~ "^-- name: " name " " { on = 1; next } on && /^-- name: / { exit } on && /^--/ { next }
     on { print; if ($0 ~ /;[[:space:]]*$/) exit }' sql/queries/records.sql |
    sed -E 's/sqlc\.narg\(pinned\)/NULL/; s/sqlc\.n?arg\(([a-z0-9_]+)\)/:\1/g'
}
statement "${OLD_STATEMENT:-RecordWalkPage}" >"$work/walk-old.sql"
statement RecordWalkFirstPage >"$work/walk-new.sql"
export PGOPTIONS="-c enable_seqscan=off -c enable_bitmapscan=off"
# wrkrps SIDE: appends the walk page's req/s to w[SIDE], and the CPU
# microseconds per request of that side's serve and of its database's
# backends (from /proc) to scpu[SIDE] and dcpu[SIDE].
wrkrps() {
  local out n
  proc_ticks "${spid[$1]}" "$work/serve.before"; dbticks "$(url "$1")" "$work/db.before"
  out=$(wrk -t2 -c"$CONNECTIONS" -d"$DURATION" -H "Authorization: Bearer ${key[$1]}" "${base[$1]}$PATH_WALK")
  proc_ticks "${spid[$1]}" "$work/serve.after"; dbticks "$(url "$1")" "$work/db.after"
  n=$(awk '/ requests in / { print $1 }' <<<"$out")
  scpu[$1]+="$(dbus "$work/serve.before" "$work/serve.after" "$n") "
  dcpu[$1]+="$(dbus "$work/db.before" "$work/db.after" "$n") "
  w[$1]+="$(awk '/Requests\/sec/ { printf "%.0f", $2 }' <<<"$out") "
}
pgtps() {
  pgbench -n -M prepared -c "$CONNECTIONS" -j 2 -T "${DURATION%s}" -D restaurant_id=r1 -D collection=temperature-records \
    -D after_sequence=0 -D max_rows=101 -D max_bytes=4194304 -f "$work/walk-$1.sql" "$(url "$1")" 2>&1 | awk '/^tps = / { printf "%.0f", $3 }'
}
# The plainest page: what the column type alone is worth on these rows.
cat >"$work/plain.sql" <<'PLAIN'
SELECT record_id, sequence, mutation_id, deleted, data, captured_at, received_at, source_version, payload_version
FROM records WHERE restaurant_id = 'r1' COLLATE "C" AND collection = 'temperature-records' AND sequence > 0
ORDER BY sequence LIMIT 100;
PLAIN
plaintps() {
  pgbench -n -M prepared -c "$CONNECTIONS" -j 2 -T "${DURATION%s}" -f "$work/plain.sql" "$(url "$1")" 2>&1 | awk '/^tps = / { printf "%.0f", $3 }'
}
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A w p q ratios scpu dcpu
for r in $(seq 1 "$ROUNDS"); do
  order="old new"; [ $((r % 2)) = 0 ] && order="new old"
  for s in $order; do wrkrps $s; done
  for s in $order; do p[$s]+="$(pgtps $s) "; done
  for s in $order; do q[$s]+="$(plaintps $s) "; done
  last() { awk '{ print $NF }' <<<"$1"; }
  echo "round $r ($order): walk req/s old $(last "${w[old]}") new $(last "${w[new]}"); data statement tps old $(last "${p[old]}") new $(last "${p[new]}"); plain page tps old $(last "${q[old]}") new $(last "${q[new]}")"
  for v in w p q; do
    declare -n runs=$v
    ratios[$v]+="$(echo "$(last "${runs[new]}") / $(last "${runs[old]}")" | bc -l) "
  done
done
range() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1; s += $1; n++ } END { printf "%d-%d (mean %.0f)", lo, hi, s / n }'; }
mean() { tr ' ' '\n' <<<"$1" | grep . | awk '{ s += $1; n++ } END { print s / n }'; }
printf 'walk, first page of 100:   old %s req/s, new %s req/s: new/old %.2f\n' "$(range "${w[old]}")" "$(range "${w[new]}")" \
  "$(echo "$(mean "${w[new]}") / $(mean "${w[old]}")" | bc -l)"
printf 'its data statement:        old %s tps,   new %s tps:   new/old %.2f\n' "$(range "${p[old]}")" "$(range "${p[new]}")" \
  "$(echo "$(mean "${p[new]}") / $(mean "${p[old]}")" | bc -l)"
printf 'the plainest page:         old %s tps,   new %s tps:   new/old %.2f\n' "$(range "${q[old]}")" "$(range "${q[new]}")" \
  "$(echo "$(mean "${q[new]}") / $(mean "${q[old]}")" | bc -l)"
for s in old new; do
  printf 'CPU per walk request, %s: serve %s µs, its database backends %s µs\n' "$s" "$(range "${scpu[$s]}")" "$(range "${dcpu[$s]}")"
done
# A shared machine's throughput drifts between rounds (seen here: a side
# 30% slower in one round than in the one before); the two runs of a round
# are adjacent, so each round's new/old is the steadier figure.
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }'; }
printf 'new/old of each round: walk %s (median %s), data statement %s (median %s), plainest page %s (median %s)\n' \
  "$(spread "${ratios[w]}")" "$(median "${ratios[w]}")" "$(spread "${ratios[p]}")" "$(median "${ratios[p]}")" \
  "$(spread "${ratios[q]}")" "$(median "${ratios[q]}")"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
