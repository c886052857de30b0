package tests

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
)

// sentQuery is one statement as the store sent it.
type sentQuery struct {
	SQL  string
	Args []any
}

// queryRecorder is a pgx tracer that keeps every statement sent, so tests
// can EXPLAIN exactly what the service runs, with the same arguments.
type queryRecorder struct {
	mu   sync.Mutex
	sent []sentQuery
}

func (r *queryRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, sentQuery{SQL: d.SQL, Args: d.Args})
	return ctx
}

func (r *queryRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// The statements of a pipeline (pgx.Batch) are recorded one by one too.
func (r *queryRecorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (r *queryRecorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, sentQuery{SQL: d.SQL, Args: d.Args})
}

func (r *queryRecorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// take returns and forgets what was recorded.
func (r *queryRecorder) take() []sentQuery {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sent
	r.sent = nil
	return out
}

// recordingStore opens a store on dbURL whose statements are recorded.
func recordingStore(t testing.TB, dbURL string) (*store.Store, *queryRecorder) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	require.NoError(t, err)
	rec := &queryRecorder{}
	cfg.ConnConfig.Tracer = rec
	plannerSettings(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return store.New(pool), rec
}

// plannerSettings gives a test's connection the settings of the service's.
func plannerSettings(cfg *pgx.ConnConfig) {
	for k, v := range store.PlannerSettings {
		cfg.RuntimeParams[k] = v
	}
}

// plannedConn connects to dbURL as the service does, to EXPLAIN its
// statements under the same planner settings.
func plannedConn(t testing.TB, dbURL string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	require.NoError(t, err)
	plannerSettings(cfg)
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	require.NoError(t, err)
	return conn
}

// planNode is the part of EXPLAIN (FORMAT JSON) the assertions read.
type planNode struct {
	NodeType  string  `json:"Node Type"`
	IndexName string  `json:"Index Name"`
	Relation  string  `json:"Relation Name"`
	PlanRows  float64 `json:"Plan Rows"`
	// Arbiters are the unique indexes an INSERT ... ON CONFLICT probes.
	Arbiters []string `json:"Conflict Arbiter Indexes"`
	// Distributed is Citus's part of a Custom Scan: how many shard tasks
	// the statement runs and the plans the workers made for them.
	Distributed *struct {
		Job struct {
			TaskCount int `json:"Task Count"`
			Tasks     []struct {
				RemotePlan [][]struct {
					Plan planNode `json:"Plan"`
				} `json:"Remote Plan"`
			} `json:"Tasks"`
		} `json:"Job"`
	} `json:"Distributed Query"`
	Plans []planNode `json:"Plans"`
}

// walk visits the plan's nodes, and on Citus the nodes of the plans the
// workers made, with the shard suffix of their index names removed.
func (n planNode) walk(f func(planNode)) {
	n.IndexName = shardSuffix.ReplaceAllString(n.IndexName, "")
	for i, a := range n.Arbiters {
		n.Arbiters[i] = shardSuffix.ReplaceAllString(a, "")
	}
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
	if n.Distributed != nil {
		for _, task := range n.Distributed.Job.Tasks {
			for _, plans := range task.RemotePlan {
				for _, p := range plans {
					p.Plan.walk(f)
				}
			}
		}
	}
}

// shardSuffix is what Citus appends to the names of a shard's indexes.
var shardSuffix = regexp.MustCompile(`_[0-9]+$`)

// explain returns the plan of q, as a custom plan for its arguments or as
// the generic plan a prepared statement may settle on.
func explain(t testing.TB, dbURL string, q sentQuery, generic bool) planNode {
	t.Helper()
	ctx := context.Background()
	conn := plannedConn(t, dbURL)
	defer conn.Close(ctx)
	mode := "force_custom_plan"
	if generic {
		mode = "force_generic_plan"
	}
	_, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode)
	require.NoError(t, err)
	var raw []byte
	require.NoError(t, conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+q.SQL, q.Args...).Scan(&raw))
	var doc []struct {
		Plan planNode `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc), "%s", raw)
	return doc[0].Plan
}

// requireIndexOnlyPlan asserts the plan reads through index and never
// sorts or scans a table sequentially; it returns the plan's node types.
func requireIndexOnlyPlan(t testing.TB, plan planNode, index string) []string {
	t.Helper()
	var types []string
	usesIndex := false
	plan.walk(func(n planNode) {
		types = append(types, n.NodeType)
		require.NotEqual(t, "Sort", n.NodeType, "plan sorts")
		require.NotEqual(t, "Incremental Sort", n.NodeType, "plan sorts")
		require.NotEqual(t, "Seq Scan", n.NodeType, "plan scans %s sequentially", n.Relation)
		if strings.Contains(n.NodeType, "Index") && n.IndexName == index {
			usesIndex = true
		}
	})
	require.True(t, usesIndex, "plan does not use %s: %v", index, types)
	return types
}
