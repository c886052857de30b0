#!/usr/bin/env bash
# make bench-migrate-data: what migration 00013 (data from jsonb to json)
# costs on this machine, both ways, over ROWS rows in records and as many in
# record_changes (default 1,000,000 each; data the size of a
# temperature-records record, about 150 bytes):
#   - the migration itself: one ALTER COLUMN TYPE per table, which rewrites
#     the table and its indexes under an ACCESS EXCLUSIVE lock (reads and
#     writes wait for all of it);
#   - the online script sql/online/00013_data_as_received.sql: batches of
#     short transactions while the tables stay open, then a swap that holds
#     the lock for its catalogue changes only.
# Each runs on its own fresh database (foodsafe_bench_migrate, dropped
# first and at the end), seeded with the same rows as jsonb; both must give
# the same stored text.
#
# Usage: make bench-migrate-data [ROWS=1000000]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin/foodsafe}
ROWS=${ROWS:-1000000}
[ -x "$BIN" ] || { echo "$BIN is missing: run make build" >&2; exit 2; }
ADMIN_URL=${BENCH_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
export DATABASE_URL=${ADMIN_URL%%/postgres\?*}/foodsafe_bench_migrate?sslmode=disable
trap 'psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS foodsafe_bench_migrate WITH (FORCE)" >/dev/null' EXIT

# seed: a database at migration 00012's schema (00013 undone), ROWS rows of
# jsonb data in each table.
seed() {
  psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS foodsafe_bench_migrate WITH (FORCE)" >/dev/null
  "$BIN" migrate --create-database >/dev/null
  psql "$DATABASE_URL" -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
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
INSERT INTO collection_streams VALUES ('r1', 'temperature-records', $ROWS);
SQL
  psql "$DATABASE_URL" -qc "VACUUM ANALYZE" -c CHECKPOINT >/dev/null
}
# ms START_NS: milliseconds since START_NS.
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
digest() { psql "$DATABASE_URL" -Atc "SELECT md5(string_agg(data::text, '|' ORDER BY record_id)) FROM records"; }
size() { psql "$DATABASE_URL" -Atc "SELECT pg_size_pretty(pg_total_relation_size('records') + pg_total_relation_size('record_changes'))"; }
per_m() { echo "scale=1; $1 * 1000000 / (2 * $ROWS) / 1000" | bc -l; } # seconds per million rows

echo "rows: $ROWS in records and $ROWS in record_changes; load average $(cut -d' ' -f1-3 /proc/loadavg)"
seed
before=$(size)
# The migration's statement, as the migration runs it (goose's Up section).
awk '/^-- \+goose StatementBegin/ { on = 1; next } /^-- \+goose StatementEnd/ { on = 0 } on' \
  sql/migrations/00013_data_as_received.sql >/tmp/foodsafe-00013.$$.sql
t=$(date +%s%N)
psql "$DATABASE_URL" -q -v ON_ERROR_STOP=1 -f /tmp/foodsafe-00013.$$.sql >/dev/null
m=$(ms "$t")
rm -f /tmp/foodsafe-00013.$$.sql
d1=$(digest)
printf 'migration (ALTER COLUMN TYPE): %d ms for both tables (%s s per million rows), all of it under ACCESS EXCLUSIVE; size %s -> %s\n' \
  "$m" "$(per_m "$m")" "$before" "$(size)"

seed
# The online script, timed as a whole and for its swap (the only step
# that stops reads and writes), from psql's own timing of each statement.
t=$(date +%s%N)
psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -e -c '\timing on' -f sql/online/00013_data_as_received.sql >/tmp/foodsafe-online.$$.log
m=$(ms "$t")
swap=$(awk '/^LOCK TABLE records, record_changes/ { on = 1 } on && /^Time: / { s += $2 } /^COMMIT;/ && on { on = 2 } on == 2 && /^Time: / { print int(s + 0.5); exit }' /tmp/foodsafe-online.$$.log)
rm -f /tmp/foodsafe-online.$$.log
d2=$(digest)
printf 'online script: %d ms for both tables (%s s per million rows) in short transactions; the swap held ACCESS EXCLUSIVE %s ms; size %s -> %s\n' \
  "$m" "$(per_m "$m")" "${swap:-?}" "$before" "$(size)"
[ "$d1" = "$d2" ] || { echo "the two ways stored different text" >&2; exit 1; }
echo "both ways stored the same text"
