package tests

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// BenchmarkChangesWalk: the time of a whole walk, 100 records per page,
// of a 1,000,000-record collection (10% of its records updated 10
// times): a full walk next to changes walks that bring 0, 100 and 10,000
// changed records (90% updated, 10% deleted). Each is measured on tables
// never ANALYZEd, then ANALYZEd. ns/op is one whole walk; pages/op is its
// requests.
func BenchmarkChangesWalk(b *testing.B) {
	const n, limit = 1_000_000, 100
	dbURL := testdb.URL(b)
	start := time.Now()
	seedHistoryNoStatsSQL(b, dbURL, n, 10)
	b.Logf("seeded %d records in %s", n, time.Since(start).Round(time.Second))
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	require.NoError(b, err)
	b.Cleanup(st.Close)

	first, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: limit})
	require.NoError(b, err)
	since := map[int]int64{10_000: first.Pinned}
	for i := 1; i <= 10_000; i++ {
		m := store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas", RecordID: fmt.Sprintf("rec-%d", i*997%n+1)},
			MutationID: fmt.Sprintf("chg-%d", i), Deleted: i%10 == 0, CapturedAt: 1, PayloadVersion: 1}
		if !m.Deleted {
			m.Data = []byte(fmt.Sprintf(`{"name":"chg-%d","isDeleted":false}`, i))
		}
		d := sha256.Sum256(append([]byte(m.MutationID), m.Data...))
		m.RequestSHA256 = d[:]
		e, _, err := st.RecordIngest(ctx, m, 1)
		require.NoError(b, err)
		switch i {
		case 9_900:
			since[100] = int64(e.Sequence)
		case 10_000:
			since[0] = int64(e.Sequence)
		}
	}

	// walk runs a whole walk: full when from is nil, else the changes
	// since *from.
	walk := func(b *testing.B, from *int64) (pages, records int) {
		var page store.WalkPage
		var err error
		if from == nil {
			page, err = st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: limit})
		} else {
			page, err = st.RecordChanges(ctx, store.RecordChangesParams{RestaurantID: "r1", Collection: "areas", Limit: limit, Since: *from})
		}
		for {
			if err != nil {
				b.Fatal(err)
			}
			pages++
			records += len(page.Records)
			if page.Next == nil {
				return pages, records
			}
			page, err = st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: limit, Pos: page.Next})
		}
	}
	for _, stats := range []string{"never-analyzed", "analyzed"} {
		if stats == "analyzed" {
			analyze(b, dbURL)
		}
		for _, c := range []struct {
			name string
			from *int64
			want int
		}{
			{"full", nil, n}, // the 1,000 deleted records as tombstones
			{"changes=0", ptr(since[0]), 0},
			{"changes=100", ptr(since[100]), 100},
			{"changes=10000", ptr(since[10_000]), 10_000},
		} {
			b.Run(stats+"/"+c.name, func(b *testing.B) {
				var pages, records int
				for b.Loop() {
					pages, records = walk(b, c.from)
				}
				if records != c.want {
					b.Fatalf("%d records, want %d", records, c.want)
				}
				b.ReportMetric(float64(pages), "pages/op")
				b.ReportMetric(float64(records), "records/op")
			})
		}
	}
}

func ptr[T any](v T) *T { return &v }
