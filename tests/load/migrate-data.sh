#!/usr/bin/env bash
# make bench-migrate-data: what a data migration costs on this machine,
# over ROWS rows (default 1,000,000), MIGRATION picking which:
#   00013 (default): records.data and record_changes.data from jsonb to
#     json, ROWS rows in each table (data the size of a temperature-records
#     record, about 150 bytes);
#   00019: deliveries.temperature_records from jsonb to json, ROWS
#     deliveries of two temperature records each;
# both ways for these two:
#   - the migration itself: ALTER COLUMN TYPE, which rewrites the table and
#     its indexes under an ACCESS EXCLUSIVE lock (reads and writes wait for
#     all of it);
#   - the online script sql/online/<migration>_*.sql: batches of short
#     transactions while the tables stay open, then a swap that holds the
#     lock for its catalogue changes only;
# each on its own fresh database seeded with the same rows as jsonb; both
# must give the same stored text.
#   00020: integer fields in plain form, ROWS rows in records and as many
#     in record_changes, one in ten of a collection with integer fields
#     (equipment, cleaning-tasks, restaurants), one in a hundred of those
#     with an integer in another form (1.0): the migration once (it takes
#     no lock but the updated rows', so it has no online variant).
# The database is foodsafe_bench_migrate, dropped first and at the end.
#
# Usage: make bench-migrate-data [MIGRATION=00013|00019|00020] [ROWS=1000000]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin/foodsafe}
ROWS=${ROWS:-1000000}
MIGRATION=${MIGRATION:-00013}
[ -x "$BIN" ] || { echo "$BIN is missing: run make build" >&2; exit 2; }
ADMIN_URL=${BENCH_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
export DATABASE_URL=${ADMIN_URL%%/postgres\?*}/foodsafe_bench_migrate?sslmode=disable
tmp=$(mktemp -d)
trap 'psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS foodsafe_bench_migrate WITH (FORCE)" >/dev/null; rm -rf "$tmp"' EXIT

case "$MIGRATION" in
  00013)
    file=sql/migrations/00013_data_as_received.sql online=sql/online/00013_data_as_received.sql
    swap_lock='LOCK TABLE records, record_changes' tables="records and record_changes" rows=$((2 * ROWS))
    digest_sql="SELECT md5(string_agg(data::text, '|' ORDER BY record_id)) FROM records"
    size_sql="SELECT pg_size_pretty(pg_total_relation_size('records') + pg_total_relation_size('record_changes'))"
    # A database at migration 00012's schema for data (00013 undone),
    # ROWS rows of jsonb data in each table.
    seed_sql=$(cat <<SQL
ALTER TABLE records ALTER COLUMN data TYPE jsonb USING data::jsonb;
ALTER TABLE record_changes ALTER COLUMN data TYPE jsonb USING data::jsonb;
INSERT INTO restaurants (id) VALUES ('r1');
INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data, captured_at,
                            received_at, payload_version, request_sha256)
SELECT 'r1', 'temperature-records', i, 'rec-' || i, 'seed-' || i, false,
       jsonb_build_object('timestamp', (1700000000000 + i)::text, 'value', 3.5 + (i % 70) / 10.0, 'unit', '°C',
                          'shift', 'MORNING', 'equipmentId', 'fridge-' || (i % 40), 'correctiveActions', NULL,
                          'userId', 'user-' || (i % 12)),
       1700000000000 + i, 1700000000000 + i, 1, sha256(i::text::bytea)
FROM generate_series(1, $ROWS) i;
INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at, received_at, payload_version)
SELECT restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at, received_at, payload_version
FROM record_changes;
INSERT INTO collection_streams (restaurant_id, collection, last_sequence) VALUES ('r1', 'temperature-records', $ROWS);
SQL
    )
    ;;
  00019)
    file=sql/migrations/00019_delivery_temperatures_as_received.sql online=sql/online/00019_delivery_temperatures_as_received.sql
    swap_lock='LOCK TABLE deliveries' tables="deliveries" rows=$ROWS
    digest_sql="SELECT md5(string_agg(temperature_records::text, '|' ORDER BY id)) FROM deliveries"
    size_sql="SELECT pg_size_pretty(pg_total_relation_size('deliveries'))"
    # A database at migration 00018's schema for deliveries (00019 undone),
    # ROWS deliveries with two temperature records each as jsonb.
    seed_sql=$(cat <<SQL
ALTER TABLE deliveries ALTER COLUMN temperature_records TYPE jsonb USING temperature_records::jsonb;
INSERT INTO restaurants (id) VALUES ('r1');
INSERT INTO deliveries (restaurant_id, id, occurred_at, is_compliant, supplier_id, supplier_name, temperature_records,
                        non_compliance_reasons, corrective_actions, commentary, image_count, content_sha256, received_sequence)
SELECT 'r1', 'del-' || i, 1700000000000 + i, i % 7 <> 0, 'sup-' || (i % 30), 'Supplier ' || (i % 30),
       jsonb_build_array(jsonb_build_object('product', 'Chicken breast', 'lotNumber', 'L-' || i, 'unit', '°C', 'value', 3.5 + (i % 70) / 10.0),
                         jsonb_build_object('product', 'Yoghurt', 'lotNumber', 'Y-' || i, 'unit', '°C', 'value', (i % 9) - 1)),
       '{}', '{}', NULL, i % 4, sha256(i::text::bytea), i
FROM generate_series(1, $ROWS) i;
INSERT INTO collection_streams (restaurant_id, collection, last_sequence) VALUES ('r1', 'deliveries', $ROWS);
SQL
    )
    ;;
  00020)
    file=sql/migrations/00020_integer_fields_plain.sql online=""
    tables="records and record_changes" rows=$((2 * ROWS))
    digest_sql="SELECT count(*) FILTER (WHERE data::text LIKE '%\"index\":1.0%') FROM records"
    size_sql="SELECT pg_size_pretty(pg_total_relation_size('records') + pg_total_relation_size('record_changes'))"
    # ROWS changes and records: nine in ten temperature records, one in ten
    # of a collection with integer fields, 1% of those with index 1.0.
    seed_sql=$(cat <<SQL
INSERT INTO restaurants (id) VALUES ('r1');
INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data, captured_at,
                            received_at, payload_version, request_sha256)
SELECT 'r1', c, i, 'rec-' || i, 'seed-' || i, false,
       CASE c
         WHEN 'temperature-records' THEN json_build_object('timestamp', (1700000000000 + i)::text, 'value', 3.5 + (i % 70) / 10.0,
                                       'unit', '°C', 'shift', 'MORNING', 'equipmentId', 'fridge-' || (i % 40), 'userId', 'user-' || (i % 12))
         WHEN 'equipment' THEN ('{"index":' || CASE WHEN i % 1000 = 10 THEN '1.0' ELSE (i % 50)::text END ||
                                ',"type":"FRIDGE","name":"Fridge ' || i || '","isDeleted":false,"min":0,"max":4.0}')::json
         WHEN 'cleaning-tasks' THEN ('{"index":' || (i % 50) || ',"name":"Task ' || i || '","recurrence":7,"isDeleted":false}')::json
         ELSE ('{"name":"R ' || i || '","address":"A","closingDays":[],"settings":{"global":{"reportWeekday":5}}}')::json
       END,
       1700000000000 + i, 1700000000000 + i, 1, sha256(i::text::bytea)
FROM generate_series(1, $ROWS) i,
     LATERAL (SELECT CASE WHEN i % 10 <> 0 THEN 'temperature-records' WHEN i % 30 = 0 THEN 'restaurants'
                          WHEN i % 20 = 0 THEN 'cleaning-tasks' ELSE 'equipment' END AS c) k;
INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at, received_at, payload_version)
SELECT restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at, received_at, payload_version
FROM record_changes;
SQL
    )
    ;;
  *) echo "MIGRATION must be 00013, 00019 or 00020" >&2; exit 2 ;;
esac

seed() {
  psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS foodsafe_bench_migrate WITH (FORCE)" >/dev/null
  "$BIN" migrate --create-database >/dev/null
  psql "$DATABASE_URL" -q -v ON_ERROR_STOP=1 >/dev/null <<<"$seed_sql"
  psql "$DATABASE_URL" -qc "VACUUM ANALYZE" -c CHECKPOINT >/dev/null
}
# ms START_NS: milliseconds since START_NS.
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
digest() { psql "$DATABASE_URL" -Atc "$digest_sql"; }
size() { psql "$DATABASE_URL" -Atc "$size_sql"; }
per_m() { echo "scale=1; $1 * 1000000 / $rows / 1000" | bc -l; } # seconds per million rows

echo "migration $MIGRATION: $rows rows in $tables; load average $(cut -d' ' -f1-3 /proc/loadavg)"
seed
before=$(size)
# The migration's statements, as the migration runs them: its DO block
# (00013, 00019; what runs while the column is still jsonb), or its whole
# Up section (00020).
if [ "$MIGRATION" = 00020 ]; then
  awk '/^-- \+goose Down/ { exit } { print }' "$file" >"$tmp/up.sql"
else
  awk '/^-- \+goose StatementBegin/ { on = 1; next } /^-- \+goose StatementEnd/ { on = 0 } on' "$file" >"$tmp/up.sql"
fi
t=$(date +%s%N)
psql "$DATABASE_URL" -q -v ON_ERROR_STOP=1 -f "$tmp/up.sql" >"$tmp/up.log" 2>&1
m=$(ms "$t")
d1=$(digest)
if [ -z "$online" ]; then
  printf 'migration: %d ms for %s (%s s per million rows), no lock but the updated rows'"'"'; %s; size %s -> %s\n' \
    "$m" "$tables" "$(per_m "$m")" "$(grep -o 'integer fields in plain form: .*' "$tmp/up.log" || echo '?')" "$before" "$(size)"
  [ "$d1" = 0 ] || { echo "$d1 records still hold index 1.0" >&2; exit 1; }
  exit 0
fi
printf 'migration (ALTER COLUMN TYPE): %d ms for %s (%s s per million rows), all of it under ACCESS EXCLUSIVE; size %s -> %s\n' \
  "$m" "$tables" "$(per_m "$m")" "$before" "$(size)"

seed
# The online script, timed as a whole and for its swap (the only step
# that stops reads and writes), from psql's own timing of each statement.
t=$(date +%s%N)
psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -e -c '\timing on' -f "$online" >"$tmp/online.log"
m=$(ms "$t")
swap=$(awk -v lock="^$swap_lock" '$0 ~ lock { on = 1 } on && /^Time: / { s += $2 } /^COMMIT;/ && on { on = 2 } on == 2 && /^Time: / { print int(s + 0.5); exit }' "$tmp/online.log")
d2=$(digest)
printf 'online script: %d ms for %s (%s s per million rows) in short transactions; the swap held ACCESS EXCLUSIVE %s ms; size %s -> %s\n' \
  "$m" "$tables" "$(per_m "$m")" "${swap:-?}" "$before" "$(size)"
[ "$d1" = "$d2" ] || { echo "the two ways stored different text" >&2; exit 1; }
echo "both ways stored the same text"
