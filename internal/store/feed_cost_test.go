package store_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
	"github.com/foodsafe/foodsafe/internal/testdb"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// statementCounter is a pgx tracer that counts what the store sends:
// statements (alone or in a pipeline), round trips (a statement alone or
// a pipeline) and the rows PostgreSQL returned to pipelined statements
// (the feed reads streams only in pipelines, and lists them alone);
// queryRows, the rows returned to statements sent alone. A walk page that
// a plain walk statement declines (its one row, the sum_bytes marker, says
// a record of the stream could carry the page past its bytes) is read
// again by a summed statement with the same arguments: the marker is no
// record read, so the rows counted leave it out (declinedRows).
type statementCounter struct {
	statements, roundTrips, rows, queryRows atomic.Int64
	mu                                      sync.Mutex
	// oneRow are the plain walk reads that returned one row, by their
	// arguments: a marker if a summed statement follows with the same.
	oneRow map[string]bool
	// declinedRows are the markers found, in pipelines and alone.
	declinedRows, declinedQueryRows int64
}

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.statements.Add(1)
	c.roundTrips.Add(1)
	if c.declinedBefore(d.SQL, d.Args) {
		c.mu.Lock()
		c.declinedQueryRows++
		c.mu.Unlock()
	}
	return context.WithValue(ctx, walkArgs{}, d)
}

// walkArgs keys the statement's start data in its context, for its end.
type walkArgs struct{}

func (c *statementCounter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if d.CommandTag.Select() {
		c.queryRows.Add(d.CommandTag.RowsAffected())
	}
	if start, ok := ctx.Value(walkArgs{}).(pgx.TraceQueryStartData); ok {
		c.walkRead(start.SQL, start.Args, d.CommandTag.RowsAffected())
	}
}

func (c *statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.roundTrips.Add(1)
	return ctx
}

func (c *statementCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.statements.Add(1)
	if c.declinedBefore(d.SQL, d.Args) {
		c.mu.Lock()
		c.declinedRows++
		c.mu.Unlock()
	}
	if d.CommandTag.Select() {
		c.rows.Add(d.CommandTag.RowsAffected())
	}
	c.walkRead(d.SQL, d.Args, d.CommandTag.RowsAffected())
}

func (c *statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// walkRead notes a plain walk statement that returned one row.
func (c *statementCounter) walkRead(sql string, args []any, rows int64) {
	if (sql != db.RecordWalkPage && sql != db.RecordWalkFirstPage) || rows != 1 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.oneRow == nil {
		c.oneRow = map[string]bool{}
	}
	c.oneRow[sql+argsKey(args)] = true
}

// declinedBefore reports whether sql is a summed walk statement whose
// plain statement, with the same arguments, returned one row: its marker.
func (c *statementCounter) declinedBefore(sql string, args []any) bool {
	plain := map[string]string{db.RecordWalkPageSummed: db.RecordWalkPage, db.RecordWalkFirstPageSummed: db.RecordWalkFirstPage}[sql]
	if plain == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := plain + argsKey(args)
	found := c.oneRow[k]
	delete(c.oneRow, k)
	return found
}

// argsKey is a statement's arguments as text, pointers followed.
func argsKey(args []any) string {
	var b strings.Builder
	for _, a := range args {
		switch v := a.(type) {
		case *int64:
			if v == nil {
				b.WriteString("nil|")
				continue
			}
			fmt.Fprintf(&b, "%d|", *v)
		default:
			fmt.Fprintf(&b, "%v|", v)
		}
	}
	return b.String()
}

// takeQueryRows returns the rows returned to statements sent alone since
// the last call, markers left out, and starts again.
func (c *statementCounter) takeQueryRows() int {
	c.mu.Lock()
	declined := c.declinedQueryRows
	c.declinedQueryRows = 0
	c.mu.Unlock()
	return int(c.queryRows.Swap(0) - declined)
}

// take returns the counts since the last call and starts again.
func (c *statementCounter) take() (statements, roundTrips, rows int) {
	c.mu.Lock()
	declined := c.declinedRows
	c.declinedRows, c.oneRow = 0, nil
	c.mu.Unlock()
	return int(c.statements.Swap(0)), int(c.roundTrips.Swap(0)), int(c.rows.Swap(0) - declined)
}

// feedPageCost is what one feed page returned and what reading it cost.
type feedPageCost struct {
	items, bytes, statements, roundTrips, rows int
	// small is the items of under 1 kB of data.
	small int
}

// feedCosts reads a whole feed, page by page, through a store whose
// statements c counts, and returns its items (as feedAll) and each page's
// cost.
func feedCosts(t *testing.T, st *store.Store, c *statementCounter, groups []store.StreamGroup, limit, maxBytes int) (items []string, costs []feedPageCost) {
	t.Helper()
	at := store.FeedAt{}
	for len(costs) < 10_000 {
		c.take()
		p, err := st.RecordFeed(context.Background(), store.RecordFeedParams{Groups: groups, At: at, Limit: limit, MaxBytes: maxBytes})
		require.NoError(t, err)
		statements, roundTrips, rows := c.take()
		cost := feedPageCost{items: len(p.Items), statements: statements, roundTrips: roundTrips, rows: rows}
		for _, it := range p.Items {
			if it.Delivery != nil {
				items = append(items, it.RestaurantID+"/"+it.Stream+"/"+it.Delivery.ID)
				continue
			}
			items = append(items, it.RestaurantID+"/"+it.Stream+"/"+it.Record.ID)
			cost.bytes += len(it.Record.Data)
			if len(it.Record.Data) < 1000 {
				cost.small++
			}
		}
		costs = append(costs, cost)
		if p.Next == nil {
			return items, costs
		}
		at = *p.Next
	}
	t.Fatal("the feed never ended")
	return nil, nil
}

// openCountedStore is openStore with every statement counted.
func openCountedStore(t *testing.T) (*store.Store, *statementCounter) {
	t.Helper()
	c := &statementCounter{}
	st, err := store.Open(context.Background(), testdb.URL(t), c)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	return st, c
}

// ingestAll adds the restaurants, then writes each restaurant's records
// (collection, id and data per write, in order) through the store's
// ingest, restaurants in parallel.
func ingestAll(t *testing.T, st *store.Store, restaurants []string, writes map[string][][3]string) {
	t.Helper()
	ctx := context.Background()
	_, err := st.Pool().Exec(ctx, `INSERT INTO restaurants (id) SELECT unnest($1::text[])`, restaurants)
	require.NoError(t, err)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, 4)
	)
	for r, ws := range writes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			for i, w := range ws {
				m := fmt.Sprintf("%s-%d", r, i)
				d := sha256.Sum256([]byte(m))
				_, _, err := st.RecordIngest(ctx, store.Mutation{RecordKey: store.RecordKey{RestaurantID: r, Collection: w[0], RecordID: w[1]},
					MutationID: m, Data: []byte(w[2]), CapturedAt: 7, PayloadVersion: 1, RequestSHA256: d[:]}, 11)
				if err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, first)
}

// A feed page costs about its rows whatever the streams' shapes: over
// data shaped like production (most streams of 1 to 4 records, a fifth
// of the records written twice so heads overstate, a few streams of 250
// records), every page at every limit sends at most its items plus a few
// statements, in at most eight round trips, and fetches at most twice
// its items in rows. The planner before this one sent thousands of
// statements for some pages: a stream left part-read sent every later
// stream of the page back to reads of one row.
func TestRecordFeedPageCostsItsRows(t *testing.T) {
	t.Parallel()
	st, counter := openCountedStore(t)
	collections := []string{"areas", "products", "suppliers", "users"}
	var restaurants []string
	writes := map[string][][3]string{}
	var want []string
	for i := range 160 {
		r := fmt.Sprintf("r%03d", i)
		restaurants = append(restaurants, r)
		for j, c := range collections {
			n := 0
			switch {
			case i%40 == 7 && c == "products":
				n = 250
			case (i*7+j*3)%5 == 0:
				continue
			default:
				n = 1 + (i*3+j*5)%4
			}
			for k := range n {
				id := fmt.Sprintf("%s%03d", c[:1], k)
				data := fmt.Sprintf(`{"name":%q,"isDeleted":false}`, strings.Repeat("n", 40+(i+k)%60))
				writes[r] = append(writes[r], [3]string{c, id, data})
				if (i+j+k)%5 == 0 {
					writes[r] = append(writes[r], [3]string{c, id, data})
				}
				want = append(want, r+"/"+c+"/"+id)
			}
		}
	}
	ingestAll(t, st, restaurants, writes)
	groups := []store.StreamGroup{{Restaurants: restaurants, Streams: collections}}
	for _, limit := range []int{100, 500} {
		items, costs := feedCosts(t, st, counter, groups, limit, 1<<20)
		require.Equal(t, want, items, "limit %d: every record once, in order", limit)
		requireCostsItsRows(t, limit, costs)
	}
}

// requireCostsItsRows logs the most any page cost and requires of each
// page at most its items plus 8 statements, at most 8 round trips and at
// most twice its items plus 8 rows fetched.
func requireCostsItsRows(t *testing.T, limit int, costs []feedPageCost) {
	t.Helper()
	most := feedPageCost{}
	for _, c := range costs {
		most.statements, most.roundTrips = max(most.statements, c.statements), max(most.roundTrips, c.roundTrips)
		most.rows, most.items = max(most.rows, c.rows), max(most.items, c.items)
	}
	t.Logf("limit %d: %d pages of at most %d items; the most a page sent: %d statements, %d round trips, %d rows fetched",
		limit, len(costs), most.items, most.statements, most.roundTrips, most.rows)
	for i, c := range costs {
		require.LessOrEqual(t, c.statements, c.items+8, "limit %d, page %d of %d: statements %+v", limit, i, len(costs), c)
		require.LessOrEqual(t, c.roundTrips, 8, "limit %d, page %d: round trips %+v", limit, i, c)
		require.LessOrEqual(t, c.rows, 2*c.items+8, "limit %d, page %d: rows fetched %+v", limit, i, c)
	}
}

// The same holds when every head overstates its stream many times over
// (each stream one record written 12 times, heads of 12 for one item) and
// a few large streams sit among them: a round reads the streams the share
// seen so far promises, and a large one read with less than it holds
// leaves the reads after it for when it ends, instead of sending them
// again.
func TestRecordFeedPageCostsItsRowsWhenHeadsOverstate(t *testing.T) {
	t.Parallel()
	st, counter := openCountedStore(t)
	var restaurants []string
	writes := map[string][][3]string{}
	var want []string
	for i := range 120 {
		r := fmt.Sprintf("r%03d", i)
		restaurants = append(restaurants, r)
		for _, c := range []string{"areas", "products"} {
			n, w := 1, 12
			if c == "products" && i%30 == 3 {
				n, w = 120, 1
			}
			for k := range n {
				id := fmt.Sprintf("%s%03d", c[:1], k)
				for range w {
					writes[r] = append(writes[r], [3]string{c, id, `{"name":"x","isDeleted":false}`})
				}
				want = append(want, r+"/"+c+"/"+id)
			}
		}
	}
	ingestAll(t, st, restaurants, writes)
	groups := []store.StreamGroup{{Restaurants: restaurants, Streams: []string{"areas", "products"}}}
	for _, limit := range []int{7, 100, 500} {
		items, costs := feedCosts(t, st, counter, groups, limit, 1<<20)
		require.Equal(t, want, items, "limit %d: every record once, in order", limit)
		requireCostsItsRows(t, limit, costs)
	}
}

// A feed page of large records reads about what it returns, in bytes as
// in rows: over records of 400 kB (a page of 1 MiB holds three), each
// page fetches at most one record more than it returns, whether it starts
// inside a stream or crosses several, and every record comes once, in
// order. Before, the first read of each page fetched up to 64 records to
// learn their size. The same holds when large records follow small ones
// (a stream of 3 tiny records, then one of 40 large): the rows planned
// from the small ones are cut at the page's bytes, where before the page
// read 43 rows (16 MB) to return 6.
func TestRecordFeedReadsWhatItReturns(t *testing.T) {
	t.Parallel()
	st, counter := openCountedStore(t)
	const size = 400_000
	data := fmt.Sprintf(`{"name":%q,"isDeleted":false}`, strings.Repeat("x", size-29))
	require.Equal(t, size, len(data))
	restaurants := []string{"big", "s1", "s2", "s3", "s4", "mixed-a", "mixed-b"}
	writes := map[string][][3]string{}
	var want, wantMixed []string
	for _, r := range restaurants {
		n, d := 2, data
		switch r {
		case "big":
			n = 9
		case "mixed-a":
			n, d = 3, `{"name":"x","isDeleted":false}`
		case "mixed-b":
			n = 40
		}
		for k := range n {
			id := fmt.Sprintf("u%02d", k)
			writes[r] = append(writes[r], [3]string{"users", id, d})
			if strings.HasPrefix(r, "mixed-") {
				wantMixed = append(wantMixed, r+"/users/"+id)
			} else {
				want = append(want, r+"/users/"+id)
			}
		}
	}
	ingestAll(t, st, restaurants, writes)
	groups := []store.StreamGroup{{Restaurants: []string{"big", "s1", "s2", "s3", "s4"}, Streams: []string{"users"}}}
	items, costs := feedCosts(t, st, counter, groups, 500, 1<<20)
	require.Equal(t, want, items)
	for i, c := range costs {
		require.LessOrEqual(t, c.rows*size, c.bytes+size, "page %d of %d: bytes read, returned and one record: %+v", i, len(costs), c)
		require.GreaterOrEqual(t, c.items, 2, "page %d: a page of 1 MiB holds 2 or 3 of them (the last may hold 1)", i)
	}
	groups = []store.StreamGroup{{Restaurants: []string{"mixed-a", "mixed-b"}, Streams: []string{"users"}}}
	items, costs = feedCosts(t, st, counter, groups, 500, 1<<20)
	require.Equal(t, wantMixed, items, "every record once, in order")
	for i, c := range costs {
		// A row fetched is counted large unless the page returned it small.
		require.LessOrEqual(t, (c.rows-c.small)*size, c.bytes+size, "page %d of %d: bytes read, returned and one record: %+v", i, len(costs), c)
	}
}

// Streams read with less than they hold because the page expected little
// of them (after streams whose heads overstated many times over) are
// continued together in the next round, not one round each: after 20
// streams of one record written 40 times, 60 streams of 10 records fill
// pages of 500 in a few rounds, every page full but the last.
func TestRecordFeedContinuesStreamsTogether(t *testing.T) {
	t.Parallel()
	st, counter := openCountedStore(t)
	var restaurants []string
	writes := map[string][][3]string{}
	var want []string
	for i := range 80 {
		r := fmt.Sprintf("r%03d", i)
		restaurants = append(restaurants, r)
		n, w := 10, 1
		if i < 20 {
			n, w = 1, 40
		}
		for k := range n {
			id := fmt.Sprintf("a%03d", k)
			for range w {
				writes[r] = append(writes[r], [3]string{"areas", id, `{"name":"x","isDeleted":false}`})
			}
			want = append(want, r+"/areas/"+id)
		}
	}
	ingestAll(t, st, restaurants, writes)
	groups := []store.StreamGroup{{Restaurants: restaurants, Streams: []string{"areas"}}}
	requireFullPages(t, st, counter, groups, want, "every record once, in order", 100, 500)
}

// requireFullPages reads the feed of groups at each limit and requires
// want, in order (what says so), at the cost of its rows
// (requireCostsItsRows), every page full but the last.
func requireFullPages(t *testing.T, st *store.Store, counter *statementCounter, groups []store.StreamGroup, want []string, what string, limits ...int) {
	t.Helper()
	for _, limit := range limits {
		items, costs := feedCosts(t, st, counter, groups, limit, 1<<20)
		require.Equal(t, want, items, "limit %d: %s", limit, what)
		requireCostsItsRows(t, limit, costs)
		require.Len(t, costs, (len(want)+limit-1)/limit, "limit %d: full pages", limit)
	}
}

// Deliveries streams are continued as collections are: after streams
// whose heads overstated 20 times, restaurants' deliveries of 1 to 12
// come whole, once each and in receive order, at every limit, each page
// within the same bounds.
func TestRecordFeedContinuesDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, counter := openCountedStore(t)
	var restaurants []string
	writes := map[string][][3]string{}
	var want []string
	at := time.UnixMilli(1_800_000_000_000)
	var deliveries []wire.Delivery
	for i := range 40 {
		r := fmt.Sprintf("r%03d", i)
		restaurants = append(restaurants, r)
		for range 20 {
			writes[r] = append(writes[r], [3]string{"areas", "a1", `{"name":"x","isDeleted":false}`})
		}
		want = append(want, r+"/areas/a1")
		for k := range 1 + i%12 {
			id := fmt.Sprintf("d%02d", k)
			deliveries = append(deliveries, wire.Delivery{ID: id, RestaurantID: r, OccurredAt: wire.Millis(at.UnixMilli()), IsCompliant: true,
				Supplier: wire.Supplier{ID: "s1", Name: "Supplier"}, TemperatureRecords: []wire.TemperatureRecord{},
				NonComplianceReasons: []string{}, CorrectiveActions: []string{}})
			want = append(want, r+"/"+store.DeliveryStream+"/"+id)
		}
	}
	ingestAll(t, st, restaurants, writes)
	for _, d := range deliveries {
		digest, err := d.ContentDigest()
		require.NoError(t, err)
		_, _, err = st.DeliveryCreate(ctx, d, digest)
		require.NoError(t, err)
	}
	groups := []store.StreamGroup{{Restaurants: restaurants, Streams: []string{"areas", store.DeliveryStream}}}
	requireFullPages(t, st, counter, groups, want, "every record and delivery once, in order", 1, 3, 7, 50, 500)
}
