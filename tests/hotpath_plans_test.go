package tests

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// hotPathIndexes names, for every statement a request runs on a hot path,
// the indexes its plan must read and the only ones it may read. A plan that
// picks another index (records_walk_idx for a lookup by record id, say),
// scans a table sequentially or sorts fails the test.
var hotPathIndexes = map[string][]string{
	"KeyAuthLookup":             {"api_keys_public_id_key", "key_grant_sets_pkey", "key_grants_pkey"},
	"SessionAuthLookup":         {"mobile_sessions_public_id_key", "api_keys_pkey", "session_grant_sets_pkey"},
	"RecordGet":                 {"records_pkey"},
	"RecordWalkPage":            {"records_walk_idx", "record_changes_lifetime_idx", "collection_streams_pkey"},
	"RecordWalkFirstPage":       {"records_walk_idx", "collection_streams_pkey"},
	"RecordWalkPageSummed":      {"records_walk_idx", "record_changes_lifetime_idx", "collection_streams_pkey"},
	"RecordWalkFirstPageSummed": {"records_walk_idx", "collection_streams_pkey"},
	"RecordChangeByMutation":    {"record_changes_pkey"},
	"RecordChangesByMutations":  {"record_changes_pkey"},
	"StreamNextSequence":        {"collection_streams_pkey"},
	"RecordApplyChange":         {"collection_streams_pkey", "record_changes_pkey", "records_pkey"},
	"RecordChangeAppend":        {"record_changes_pkey"},
	"RecordSupersedePrevious":   {"records_pkey", "record_changes_pkey"},
	"RecordUpsertCurrent":       {"record_changes_pkey", "records_pkey"},
	"StreamWidestRecordRaise":   {"record_changes_pkey", "collection_streams_pkey"},
	"AssetListForRecord":        {"records_pkey", "asset_uploads_pkey"},
	"DeliveryGet":               {"deliveries_pkey"},
	"DeliveryListFirst":         {"deliveries_list_idx"},
	"DeliveryListAfter":         {"deliveries_list_idx"},
	"DeliveryImageList":         {"deliveries_pkey", "delivery_images_pkey"},
	"UploadQuotaUsed":           {"upload_quota_pkey"},
	// GET /v1/changes of a key of many restaurants, from a position: the
	// streams changed service-wide. (Its fallback, StreamsChanged, probes
	// a window of the key's restaurants in collection_streams_changed_idx,
	// or reads collection_streams_xact_idx from the position when the
	// statistics say few streams changed since: either plan is bounded by
	// the window, and a full scan of a small table may beat both.)
	"StreamsChangedSince": {"collection_streams_xact_idx"},
	// The maintenance jobs: not on a request path, but they run against
	// the largest table while ingest goes on, so they must never scan it.
	"RecordChangesCompactionDue":        {"record_changes_compaction_due_idx"},
	"RecordChangesUnstampedRestaurants": {"record_changes_unstamped_idx"},
	"RecordChangesStampSuperseded":      {"record_changes_unstamped_idx", "record_changes_pkey"},
	"RecordChangesCompact":              {"record_changes_compactable_idx", "record_changes_pkey"},
	"RecordChangesCompactable":          {"record_changes_unstamped_idx", "record_changes_compactable_idx"},
	"BlobCandidates":                    {"blobs_pkey"},
	"BlobLock":                          {"blobs_pkey"},
	"BlobImageReferenced":               {"delivery_images_sha256_idx"},
	"BlobAssetReferences":               {"asset_uploads_sha256_idx", "records_pkey"},
	"StreamLock":                        {"collection_streams_pkey"},
	"AssetUploadsDeleteDead":            {"asset_uploads_sha256_idx"},
	"BlobDelete":                        {"blobs_pkey"},
}

// workerPlanned are maintenance statements whose plan on Citus is the
// workers' alone: the file collector's lookups by digest across
// restaurants (one task per shard, by design: bytes are shared across
// restaurants), its statements on the blobs reference table, the
// compaction job's searches for the restaurants it has work in (one task
// per shard too), and the stream lock. Workers plan with their own
// settings and statistics, and on this test's tiny reference tables and
// shards their cost model rightly picks sequential scans;
// docs/operators.md ("Scaling out with Citus") says to give the service's
// role the planner settings on every node. They are checked on plain
// PostgreSQL only; the request paths' statements are checked on Citus too.
var workerPlanned = map[string]bool{"BlobImageReferenced": true, "BlobAssetReferences": true,
	"AssetUploadsDeleteDead": true, "BlobCandidates": true, "BlobLock": true, "BlobDelete": true,
	"RecordChangesCompactionDue": true, "RecordChangesUnstampedRestaurants": true, "StreamLock": true}

// boundedSorts are the statements allowed a Sort node, each because what
// it sorts is bounded by a primary-key equality, never by a table's size.
var boundedSorts = map[string]bool{
	// ORDER BY image_id over a LEFT JOIN from the one delivery its primary
	// key finds: the images of that delivery.
	"DeliveryImageList": true,
	// The assets stored under one digest, in stream order (so the
	// collector takes stream locks in one order): bounded by how often
	// the same bytes were uploaded.
	"BlobAssetReferences": true,
	// The mutation ids of one batch (LIMIT max_rows), made unique before
	// they are joined back (Citus' workers sort them; PostgreSQL hashes).
	"RecordChangesStampSuperseded": true,
	"RecordChangesCompact":         true,
}

// Every hot-path statement takes its intended index whether or not its
// tables were ever analyzed (a fresh deployment before autovacuum's first
// pass; any server with autovacuum off), at 0, 1,000 and 10,000 rows, as a
// custom plan and as the generic plan a prepared statement may settle on.
// A generic plan made while a table was empty stays cached on a connection
// as the table grows, which is why the empty case counts. `make bench` runs
// it again at 1,000,000 rows (FOODSAFE_PLAN_ROWS, a comma-separated list).
func TestHotPathPlans(t *testing.T) {
	t.Parallel()
	sizes := []int{0, 1_000, 10_000}
	if env := os.Getenv("FOODSAFE_PLAN_ROWS"); env != "" {
		sizes = nil
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			require.NoError(t, err, "FOODSAFE_PLAN_ROWS")
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		t.Run(fmt.Sprintf("rows=%d", n), func(t *testing.T) {
			t.Parallel()
			dbURL := testdb.URL(t)
			seedHotPathNoStats(t, dbURL, n)
			statements := hotPathStatements(t, dbURL, n)
			for _, stats := range []string{"never analyzed", "analyzed"} {
				if stats == "analyzed" {
					if n == 0 {
						// ANALYZE of an empty table records that it is empty,
						// and every plan then costs nothing. It is not kept as
						// the table grows: autovacuum analyzes the table again
						// after autovacuum_analyze_threshold (50) rows, which
						// invalidates every plan cached on it. (A server with
						// autovacuum off must ANALYZE after loading data.)
						continue
					}
					execSQL(t, dbURL, `ANALYZE`)
				}
				for _, name := range sortedKeys(statements) {
					if workerPlanned[name] && os.Getenv("CITUS_DATABASE_URL") != "" {
						continue
					}
					q := statements[name]
					for _, generic := range []bool{false, true} {
						if generic && os.Getenv("CITUS_DATABASE_URL") != "" {
							// Citus cannot distribute some generic plans ("could
							// not create distributed plan"); it plans custom ones
							// under the default plan_cache_mode (docs/dbas.md, "Citus").
							continue
						}
						plan := explain(t, dbURL, q, generic)
						plan.walk(func(n planNode) {
							if n.Distributed != nil {
								assert.Equal(t, 1, n.Distributed.Job.TaskCount, "%s, %s, %d rows: runs on one shard", name, stats, n)
							}
						})
						requirePlanReads(t, plan, hotPathIndexes[name], boundedSorts[name], "%s, %s, %d rows, generic=%v", name, stats, n, generic)
					}
				}
			}
		})
	}
}

// hotPathStatements runs each hot path once through the store and returns
// the statements it sent, by query name.
func hotPathStatements(t *testing.T, dbURL string, n int) map[string]sentQuery {
	t.Helper()
	st, rec := recordingStore(t, dbURL)
	ctx := context.Background()
	mid := fmt.Sprintf("rec-%07d", n/2+1)

	_, err := st.KeyForAuth(ctx, "hotpathkey0000001")
	require.NoError(t, ignoreNotFound(err))
	_, err = st.SessionForAuth(ctx, "hotpathsess0000001")
	require.NoError(t, ignoreNotFound(err))
	_, err = st.RecordGet(ctx, store.RecordKey{RestaurantID: "r1", Collection: "drive-files", RecordID: mid})
	require.NoError(t, ignoreNotFound(err))
	// The walks bounded by bytes as serve bounds them (FOODSAFE_MAX_PAGE_BYTES
	// is at least 64 KiB; 4 MiB by default), of a stream of small records:
	// the plain statements read them.
	execSQL(t, dbURL, `UPDATE collection_streams SET max_record_bytes = 100 WHERE restaurant_id = 'r1' AND collection = 'drive-files'`)
	first, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "drive-files", Limit: 100, MaxBytes: 4 << 20})
	require.NoError(t, err)
	_, err = st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "drive-files", Limit: 100, MaxBytes: 4 << 20,
		Pos: &store.WalkPos{Pinned: first.Pinned, After: 0}})
	require.NoError(t, err)
	// The same walks of a stream whose largest record is unknown: the plain
	// statements decline them, and the summed ones read them. (An empty
	// stream is never declined: with no rows seeded, its position is
	// raised to 1, a change the walk no longer finds.)
	execSQL(t, dbURL, `INSERT INTO collection_streams (restaurant_id, collection, last_sequence) VALUES ('r1', 'drive-files', 1)
		ON CONFLICT (restaurant_id, collection)
		DO UPDATE SET max_record_bytes = NULL, last_sequence = greatest(collection_streams.last_sequence, 1)`)
	_, err = st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "drive-files", Limit: 100, MaxBytes: 4 << 20})
	require.NoError(t, err)
	_, err = st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "drive-files", Limit: 100, MaxBytes: 4 << 20,
		Pos: &store.WalkPos{Pinned: max(first.Pinned, 1), After: 0}})
	require.NoError(t, err)
	_, err = st.AssetList(ctx, store.RecordKey{RestaurantID: "r1", Collection: "drive-files", RecordID: mid})
	require.NoError(t, ignoreNotFound(err))
	body := []byte(`{"name":"renamed","isDeleted":false}`)
	digest := sha256.Sum256(body)
	_, _, err = st.RecordIngest(ctx, store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r2", Collection: "areas", RecordID: mid},
		MutationID: "hot-path-1", Data: body, CapturedAt: 1, PayloadVersion: 1, RequestSHA256: digest[:]}, 1)
	require.NoError(t, err)
	// A batch's replay checks, in one statement.
	res := st.RecordIngestMany(ctx, []store.Mutation{{RecordKey: store.RecordKey{RestaurantID: "r2", Collection: "areas", RecordID: mid},
		MutationID: "hot-path-1", Data: body, CapturedAt: 1, PayloadVersion: 1, RequestSHA256: digest[:]}}, []int64{1})
	require.NoError(t, res[0].Err)
	// Again with the statements ingest runs on Citus.
	st.UseDistributedIngest()
	_, _, err = st.RecordIngest(ctx, store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r2", Collection: "areas", RecordID: mid},
		MutationID: "hot-path-2", Data: body, CapturedAt: 1, PayloadVersion: 1, RequestSHA256: digest[:]}, 1)
	require.NoError(t, err)
	_, err = st.DeliveryGet(ctx, store.DeliveryKey{RestaurantID: "r1", DeliveryID: fmt.Sprintf("d%08d", n/2+1)})
	require.NoError(t, ignoreNotFound(err))
	page, _, err := st.DeliveryList(ctx, store.DeliveryListParams{RestaurantID: "r1", To: 1 << 62, Limit: 50})
	require.NoError(t, err)
	after := &store.DeliveryPos{OccurredAt: 1 << 61, ID: "d"}
	if len(page) > 0 {
		after = &store.DeliveryPos{OccurredAt: int64(page[len(page)-1].OccurredAt), ID: page[len(page)-1].ID}
	}
	_, _, err = st.DeliveryList(ctx, store.DeliveryListParams{RestaurantID: "r1", To: 1 << 62, Limit: 50, After: after})
	require.NoError(t, err)
	_, err = st.DeliveryImageList(ctx, store.DeliveryKey{RestaurantID: "r1", DeliveryID: fmt.Sprintf("d%08d", n/2+1)})
	require.NoError(t, ignoreNotFound(err))
	_, err = st.UploadQuotaUsed(ctx, "r1", int64(n/2+1), time.Now())
	require.NoError(t, err)
	// A key of 600 restaurants (beyond which a listing from a position
	// reads what changed service-wide), listed from a position.
	listed := store.StreamGroup{Streams: []string{"areas"}}
	for i := range 600 {
		listed.Restaurants = append(listed.Restaurants, fmt.Sprintf("cs%07d", i+1))
	}
	_, err = st.StreamsChanged(ctx, store.StreamsChangedParams{Groups: []store.StreamGroup{listed}, Limit: 100,
		Since: store.Snapshot{Xmin: int64(n) + 1, Xmax: int64(n) + 1}})
	require.NoError(t, err)
	_, err = st.ChangesUnstampedRestaurants(ctx, "", 100)
	require.NoError(t, err)
	_, err = st.ChangesDue(ctx, 1, store.ChangeDue{SupersededAt: -1}, 1000)
	require.NoError(t, err)
	_, err = st.ChangesStamp(ctx, "r2", 1, 1000)
	require.NoError(t, err)
	_, err = st.ChangesCompact(ctx, store.ChangesCompactParams{RestaurantID: "r2", Now: 1, Horizon: 1, Max: 1000})
	require.NoError(t, err)
	_, _, err = st.ChangesCompactable(ctx, "r2", 1)
	require.NoError(t, err)
	// The blob collector, on bytes whose only asset is dead.
	dead := strings.Repeat("ab", 32)
	execSQL(t, dbURL, `INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, captured_at,
		received_at, payload_version) VALUES ('r3', 'drive-files', 'gc-dead', 1, 'gc-dead-1', true, 0, 0, 1)`)
	execSQL(t, dbURL, `INSERT INTO asset_uploads (restaurant_id, collection, record_id, object_key, sha256, content_type,
		byte_length, uploaded_at, mutation_id) VALUES ('r3', 'drive-files', 'gc-dead', 'f', $1, 'text/plain', 1, 0, 'gc-dead-0')`, dead)
	require.NoError(t, st.BlobClaim(ctx, dead, 0))
	_, err = st.BlobCandidates(ctx, "", 1, 1000)
	require.NoError(t, err)
	collected, err := st.BlobCollect(ctx, dead, 1, false, func(context.Context) error { return nil })
	require.NoError(t, err)
	require.True(t, collected)

	out := map[string]sentQuery{}
	for _, q := range rec.take() {
		m := queryName.FindStringSubmatch(q.SQL)
		if m == nil {
			continue // begin, commit
		}
		if _, hot := hotPathIndexes[m[1]]; hot {
			out[m[1]] = q
		}
	}
	for name := range hotPathIndexes {
		if name == "RecordApplyChange" && os.Getenv("CITUS_DATABASE_URL") != "" {
			continue // ingest on Citus runs the four statements instead
		}
		require.Contains(t, out, name, "the hot paths above did not run %s", name)
	}
	return out
}

var queryName = regexp.MustCompile(`^-- name: (\w+) :`)

func ignoreNotFound(err error) error {
	if apperr.Is(err, apperr.NotFound) {
		return nil
	}
	return err
}

// seedHotPathNoStats fills every table a hot path reads with n rows (keys
// and their grants, sessions, records and their changes, asset uploads,
// deliveries and their images), in SQL and without ANALYZE.
func seedHotPathNoStats(t *testing.T, dbURL string, n int) {
	t.Helper()
	for _, r := range []string{"r1", "r2", "r3"} {
		execSQL(t, dbURL, `INSERT INTO restaurants (id) VALUES ($1)`, r)
	}
	seedRecordsNoStatsSQL(t, dbURL, "r1", "drive-files", n)
	seedRecordsNoStatsSQL(t, dbURL, "r2", "areas", n)
	// n streams of n restaurants, written by transactions 1 to n.
	execSQL(t, dbURL, `INSERT INTO restaurants (id) SELECT 'cs' || lpad(g::text, 7, '0') FROM generate_series(1, $1::int) g`, n)
	execSQL(t, dbURL, `
		INSERT INTO collection_streams (restaurant_id, collection, last_sequence, changed_xact)
		SELECT 'cs' || lpad(g::text, 7, '0'), 'areas', 1, g FROM generate_series(1, $1::int) g`, n)
	secret := sha256.Sum256([]byte("secret"))
	execSQL(t, dbURL, `
		INSERT INTO api_keys (public_id, secret_sha256, label)
		SELECT 'hotpathkey' || lpad(g::text, 7, '0'), $2, 'k' FROM generate_series(1, $1::int) g`, n, secret[:])
	execSQL(t, dbURL, `
		INSERT INTO key_grants (key_id, restaurant_id, scope)
		SELECT k.id, 'r' || (k.id % 3 + 1), s FROM api_keys k, unnest(ARRAY['areas:read', 'drive-files:read']) s`)
	// What the key commands leave: every key's grants summarised (migration 00043).
	execSQL(t, dbURL, `SELECT foodsafe_key_grant_sets_rebuild(id) FROM api_keys`)
	execSQL(t, dbURL, `
		INSERT INTO mobile_sessions (public_id, token_sha256, key_id, expires_at)
		SELECT 'hotpathsess' || lpad(k.id::text, 7, '0'), $1, k.id, now() + interval '1 hour' FROM api_keys k`, secret[:])
	execSQL(t, dbURL, `
		INSERT INTO session_grant_sets (session_id, scopes, restaurant_ids)
		SELECT s.id, ARRAY['areas:read'], ARRAY['r' || (s.id % 3 + 1)] FROM mobile_sessions s`)
	execSQL(t, dbURL, `
		INSERT INTO asset_uploads (restaurant_id, collection, record_id, object_key, sha256, content_type, byte_length,
		                           uploaded_at, mutation_id)
		SELECT restaurant_id, collection, record_id, 'file.pdf', encode(sha256(record_id::bytea), 'hex'),
		       'application/pdf', 1, 1, mutation_id
		FROM records WHERE collection = 'drive-files'`)
	execSQL(t, dbURL, `
		INSERT INTO upload_quota (restaurant_id, key_id, day, bytes)
		SELECT 'r' || (g % 3 + 1), g, current_date - g % 2, g FROM generate_series(1, $1::int) g`, n)
	execSQL(t, dbURL, `
		INSERT INTO deliveries (restaurant_id, id, occurred_at, is_compliant, supplier_id, supplier_name,
		                        temperature_records, non_compliance_reasons, corrective_actions, commentary,
		                        image_count, content_sha256, received_sequence)
		SELECT 'r' || (g % 3 + 1), 'd' || lpad(g::text, 8, '0'), 1700000000000 + (g::bigint / 3) * 60000, g % 7 = 0,
		       's1', 'Supplier', '[]', '{}', '{}', NULL, 1, sha256(g::text::bytea), g
		FROM generate_series(1, $1::int) g`, n)
	execSQL(t, dbURL, `
		INSERT INTO delivery_images (restaurant_id, delivery_id, image_id, sha256, content_type, byte_length, uploaded_at)
		SELECT restaurant_id, id, 'img-1', encode(content_sha256, 'hex'), 'image/jpeg', 1, 1 FROM deliveries`)
}

func execSQL(t *testing.T, dbURL, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	require.NoError(t, err, sql)
}

// requirePlanReads asserts the plan reads every index of want (scanned, or
// probed as an ON CONFLICT arbiter), no other index, never a table
// sequentially, and never sorts unless mayBoundedSort.
func requirePlanReads(t *testing.T, plan planNode, want []string, mayBoundedSort bool, msg string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(msg, args...)
	var nodes []string
	read := map[string]bool{}
	plan.walk(func(n planNode) {
		nodes = append(nodes, strings.TrimSpace(n.NodeType+" "+n.IndexName+" "+n.Relation))
		if n.IndexName != "" {
			read[n.IndexName] = true
		}
		for _, idx := range n.Arbiters {
			read[idx] = true
		}
	})
	for _, n := range nodes {
		assert.False(t, strings.HasPrefix(n, "Seq Scan"), "%s: sequential scan: %v", what, nodes)
		if !mayBoundedSort {
			assert.False(t, strings.HasPrefix(n, "Sort") || strings.HasPrefix(n, "Incremental Sort"), "%s: sorts: %v", what, nodes)
		}
	}
	for _, idx := range want {
		assert.True(t, read[idx], "%s: does not read %s: %v", what, idx, nodes)
	}
	for idx := range read {
		assert.Contains(t, want, idx, "%s: reads %s: %v", what, idx, nodes)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
