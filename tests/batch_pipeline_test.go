package tests

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// turnProxy stands between the service and PostgreSQL and counts round
// trips as the wire shows them: the times a connection's client sends
// again after the server has answered (a client that pipelines sends many
// statements before reading, and turns once). Whatever the code sends
// statements with, a statement per round trip shows.
type turnProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	turns int
	conns []net.Conn
}

// newTurnProxy proxies dbURL's server; it returns the proxy and the URL
// that reaches the database through it.
func newTurnProxy(t testing.TB, dbURL string) (*turnProxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &turnProxy{ln: ln}
	upstream := u.Host
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed
			}
			s, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			answered := true // a connection's first bytes are a turn
			var dir sync.Mutex
			go p.pipe(s, c, func() {
				dir.Lock()
				if answered {
					p.mu.Lock()
					p.turns++
					p.mu.Unlock()
				}
				answered = false
				dir.Unlock()
			})
			go p.pipe(c, s, func() {
				dir.Lock()
				answered = true
				dir.Unlock()
			})
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	proxied := *u
	proxied.Host = ln.Addr().String()
	return p, proxied.String()
}

// pipe copies from src to dst, calling seen before forwarding each read.
func (p *turnProxy) pipe(dst, src net.Conn, seen func()) {
	defer dst.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			seen()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				src.Close()
			}
			return
		}
	}
}

// take returns the turns counted since the last take.
func (p *turnProxy) take() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.turns
	p.turns = 0
	return n
}

// A batch's snapshots go to PostgreSQL pipelined: a batch of 200 costs the
// database a handful of round trips more than a batch of 1, not a round
// trip or more per item (one by one, 200 items cost at least 400: the
// replay check and the write of each).
func TestBatchIsPipelined(t *testing.T) {
	t.Parallel()
	proxy, proxied := newTurnProxy(t, testdb.URL(t))
	a := newApp(t, withDatabaseURL(proxied))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "temperature-readings:write", "temperature-readings:read"))
	// Warm: the key cached, the connections open, the statements prepared.
	for w := range 4 {
		a.batch(key, "r1", shiftQueue("r1", fmt.Sprintf("warm%d", w), 20, 0))
	}

	proxy.take()
	for _, r := range a.batch(key, "r1", shiftQueue("r1", "one", 1, 0)) {
		require.Equal(t, 200, r.Status, "%+v", r.Problem)
	}
	one := proxy.take()
	items := shiftQueue("r1", "many", 200, 0)
	// A conflicting reuse of a mutation id and an invalid item among them
	// are each answered on their own, and cost no round trip of the others.
	items[50] = snapshotItem("temperature-readings", reading("r1", "many-other", "many-m010", 1))
	items[120].(map[string]any)["snapshot"].(map[string]any)["capturedAt"] = "soon"
	res := a.batch(key, "r1", items)
	many := proxy.take()
	for i, r := range res {
		want := map[int]int{50: 409, 120: 400}[i]
		if want == 0 {
			want = 200
		}
		require.Equal(t, want, r.Status, "item %d: %+v", i, r.Problem)
	}
	t.Logf("round trips: a batch of 1 item %d, of 200 items %d", one, many)
	require.Less(t, many-one, 20, "a batch of 200 costs %d round trips, one of 1 costs %d", many, one)
	require.Contains(t, a.streamHeads(key), "{r1 temperature-readings 279}", "80 + 1 + 198 changes, gapless")
}

// RecordIngestMany answers and writes exactly what RecordIngest does one
// mutation at a time, for the same mutations: creates, updates, a replay
// of a change written before and of one earlier in the same call, a
// conflicting reuse (of an id written before, and of one earlier in the
// call), an event from before the restaurant's enablement, a mutation
// that fails in the database (a tombstone with data), and the mutations
// after it, which it never stops.
func TestIngestManyAgreesWithOneByOne(t *testing.T) {
	t.Parallel()
	mutation := func(col, record, mutation, body string, deleted bool, captured int64) store.Mutation {
		m := store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: col, RecordID: record},
			MutationID: mutation, Deleted: deleted, CapturedAt: captured, PayloadVersion: 1, Events: col == "temperature-readings"}
		if body != "" {
			m.Data = []byte(body)
		}
		d := sha256.Sum256([]byte(col + record + body))
		m.RequestSHA256 = d[:]
		return m
	}
	before := mutation("areas", "a", "m0", `{"name":"a0","isDeleted":false}`, false, 1)
	ms := []store.Mutation{
		mutation("areas", "a", "m1", `{"name":"a1","isDeleted":false}`, false, 1),
		before, // written before the call: a replay
		mutation("areas", "a", "m0", `{"name":"other","isDeleted":false}`, false, 1), // a conflict with it
		mutation("areas", "b", "m2", `{"name":"b1","isDeleted":false}`, false, 1),
		mutation("areas", "bad", "m3", `{"name":"x"}`, true, 1), // a tombstone with data: the database refuses it
		mutation("areas", "a", "m4", `{"name":"a2","isDeleted":false}`, false, 1),
		mutation("areas", "b", "m2", `{"name":"b1","isDeleted":false}`, false, 1),    // a replay of an earlier mutation of the call
		mutation("areas", "c", "m2", `{"name":"c1","isDeleted":false}`, false, 1),    // a conflict with it
		mutation("temperature-readings", "t", "m5", `{"value":1}`, false, 1_000),     // before the enablement
		mutation("temperature-readings", "t", "m6", `{"value":2}`, false, 5_000_000), // after it
		mutation("areas", "b", "m7", "", true, 1),
	}
	type outcome struct {
		Answers []string
		History []string
		Current []string
		Streams []string
	}
	run := func(t *testing.T, many bool) outcome {
		dbURL := testdb.URL(t)
		execSQL(t, dbURL, `INSERT INTO restaurants (id, enabled_at) VALUES ('r1', to_timestamp(1000))`)
		st, _ := recordingStore(t, dbURL)
		ctx := context.Background()
		_, _, err := st.RecordIngest(ctx, before, 1)
		require.NoError(t, err)
		var res []store.IngestOutcome
		if many {
			at := make([]int64, len(ms))
			for i := range at {
				at[i] = int64(10 + i)
			}
			res = st.RecordIngestMany(ctx, ms, at)
		} else {
			for i, m := range ms {
				var o store.IngestOutcome
				o.Envelope, o.How, o.Err = st.RecordIngest(ctx, m, int64(10+i))
				res = append(res, o)
			}
		}
		var out outcome
		for _, o := range res {
			switch e, ok := apperr.As(o.Err); {
			case o.Err == nil:
				out.Answers = append(out.Answers, fmt.Sprintf("%d %s seq %v received %v", o.How, o.Envelope.ID, o.Envelope.Sequence, o.Envelope.ReceivedAt))
			case ok:
				out.Answers = append(out.Answers, string(e.Code))
			default:
				out.Answers = append(out.Answers, "failed")
			}
		}
		out.History = queryStrings(t, st, `SELECT concat_ws(' ', collection, record_id, mutation_id, sequence, deleted, data::text, received_at, superseded_by)
		                                   FROM record_changes ORDER BY collection, sequence`)
		out.Current = queryStrings(t, st, `SELECT concat_ws(' ', collection, record_id, mutation_id, sequence, deleted, data::text)
		                                   FROM records ORDER BY collection, record_id`)
		out.Streams = queryStrings(t, st, `SELECT concat_ws(' ', collection, last_sequence, last_received_at) FROM collection_streams ORDER BY collection`)
		return out
	}
	one, many := run(t, false), run(t, true)
	require.Equal(t, one, many)
	require.Equal(t, []string{
		"0 a seq 2 received 10", "1 a seq 1 received 1", "conflict", "0 b seq 3 received 13", "failed",
		"0 a seq 4 received 15", "1 b seq 3 received 13", "conflict", "invalid-request", "0 t seq 1 received 19", "0 b seq 5 received 20",
	}, many.Answers)
	require.Equal(t, []string{"areas 5 20", "temperature-readings 1 19"}, many.Streams, "positions gapless: the refused and failed took none")
}

// queryStrings runs a query of one text column.
func queryStrings(t *testing.T, st *store.Store, sql string) []string {
	t.Helper()
	rows, err := st.Pool().Query(context.Background(), sql)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}
