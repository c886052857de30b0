package tests

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/demo"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// typed_deliveries holds each delivery's receivedAt, typed (received_at
// a time, received_at_ms epoch milliseconds), so that a delivery uploaded
// hours after it was checked shows it in the mirror, in SQLite and
// PostgreSQL. A mirror made before the API sent receivedAt (its
// deliveries' data without it, schema version 2, typed relations of the
// earlier definition) is upgraded by the next run: the deliveries are
// read once more, completed, and the typed relations hold receivedAt.
func TestSyncTypedDeliveriesHoldReceivedAt(t *testing.T) {
	t.Parallel()
	s := newDemoServer(t)
	checked := time.Now().Add(-6 * time.Hour).UnixMilli()
	put := s.a.putJSON(s.writeKey, "/v1/ingest/restaurants/"+demo.RestaurantID+"/deliveries/late-upload", deliveryJSON("late-upload", checked))
	require.Equal(t, http.StatusOK, put.Status, "%s", put.Body)
	received, _ := receivedOf(t, s.a.restBody(s.readKey, "/v1/restaurants/"+demo.RestaurantID+"/deliveries/late-upload"))
	require.GreaterOrEqual(t, received-checked, (6 * time.Hour).Milliseconds())

	for _, tc := range []struct{ name, target, strip string }{
		{"sqlite", sqliteTarget(t), `json_remove(data, '$.receivedAt')`},
		{"postgres", testdb.EmptyURL(t), `data - 'receivedAt'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sync := func() {
				t.Helper()
				res := runSync(t, s.readKey, "--api", s.p.URL, "--to", tc.target, "--json")
				require.Equal(t, 0, res.Code, "stdout:\n%s\nstderr:\n%s", res.Stdout, res.Stderr)
			}
			db, q := openTarget(t, tc.target)
			requireLate := func(what string) {
				t.Helper()
				var ms, occurred int64
				require.NoError(t, db.QueryRow(q(`SELECT received_at_ms, occurred_at_ms FROM typed_deliveries WHERE restaurant_id = ? AND id = ?`),
					demo.RestaurantID, "late-upload").Scan(&ms, &occurred), what)
				require.Equal(t, received, ms, "%s: the server's receivedAt", what)
				require.GreaterOrEqual(t, ms-occurred, (6 * time.Hour).Milliseconds(), "%s: the late upload shows", what)
				var missing int
				require.NoError(t, db.QueryRow(`SELECT count(*) FROM typed_deliveries WHERE received_at IS NULL OR received_at_ms IS NULL`).Scan(&missing))
				require.Zero(t, missing, "%s: every delivery has its receivedAt", what)
				requireTypedEqual(t, s.a, tc.target, demo.RestaurantID) // received_at as a time, cell by cell
			}
			sync()
			requireLate("first sync")

			// The mirror as the release before made it.
			for _, stmt := range []string{
				`UPDATE deliveries SET data = ` + tc.strip,
				`UPDATE typed_relations SET definition = 'earlier' WHERE source = 'deliveries'`,
				`UPDATE mirror_meta SET value = '2' WHERE name = 'schema_version'`,
			} {
				_, err := db.Exec(stmt)
				require.NoError(t, err, stmt)
			}
			var stripped int
			require.NoError(t, db.QueryRow(q(`SELECT count(*) FROM deliveries WHERE CAST(data AS TEXT) LIKE ?`), `%receivedAt%`).Scan(&stripped))
			require.Zero(t, stripped)

			sync()
			requireLate("after the upgrade")
			var version string
			require.NoError(t, db.QueryRow(`SELECT value FROM mirror_meta WHERE name = 'schema_version'`).Scan(&version))
			require.Equal(t, "3", version)
			var unfinished int
			require.NoError(t, db.QueryRow(`SELECT count(*) FROM sync_state WHERE stream = 'deliveries' AND (last_error IS NOT NULL OR changes_cursor IS NULL)`).Scan(&unfinished))
			require.Zero(t, unfinished, "the deliveries were read to their end again")

			// The next run reads nothing again.
			res := runSync(t, s.readKey, "--api", s.p.URL, "--to", tc.target, "--json")
			require.Equal(t, 0, res.Code, "%s", res.Stderr)
			require.Zero(t, res.pagesOf("deliveries"), "nothing changed")
		})
	}
}
