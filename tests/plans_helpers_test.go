package tests

import (
	"context"
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

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

// explain prepares q under a name and explains its execution with q's
// arguments: a custom plan for them, or (generic) the plan the prepared
// statement would cache for any arguments, which then shows its
// parameters as $n. (EXPLAIN of the statement with protocol parameters
// would plan it for those values whatever plan_cache_mode says.)
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
	sd, err := conn.Prepare(ctx, "", q.SQL)
	require.NoError(t, err)
	// EXECUTE's arguments cannot be protocol parameters (a utility
	// statement declares none), so they are spelled as typed literals.
	types := make([]string, len(sd.ParamOIDs))
	params := make([]string, len(sd.ParamOIDs))
	require.Len(t, q.Args, len(sd.ParamOIDs))
	for i, oid := range sd.ParamOIDs {
		dt, ok := conn.TypeMap().TypeForOID(oid)
		require.True(t, ok, "parameter type %d", oid)
		types[i] = dt.Name
		arg := q.Args[i]
		if raw, ok := arg.([]byte); ok && (dt.Name == "jsonb" || dt.Name == "json") {
			arg = string(raw)
		}
		params[i] = sqlLiteral(t, arg) + "::" + dt.Name
	}
	_, err = conn.Exec(ctx, fmt.Sprintf("PREPARE hot(%s) AS %s", strings.Join(types, ", "), q.SQL))
	require.NoError(t, err)
	var raw []byte
	explain := "EXPLAIN (FORMAT JSON, VERBOSE) EXECUTE hot"
	if len(params) > 0 {
		explain += "(" + strings.Join(params, ", ") + ")"
	}
	require.NoError(t, conn.QueryRow(ctx, explain).Scan(&raw), explain)
	if generic && len(params) > 0 {
		require.Contains(t, string(raw), "$1", "not a generic plan: %s", raw)
	}
	var doc []struct {
		Plan planNode `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc), "%s", raw)
	return doc[0].Plan
}

// sqlLiteral spells a statement argument as SQL text.
func sqlLiteral(t testing.TB, v any) string {
	t.Helper()
	if valuer, ok := v.(driver.Valuer); ok {
		var err error
		v, err = valuer.Value()
		require.NoError(t, err)
	}
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return quote(v)
	case []byte:
		return quote(`\x` + hex.EncodeToString(v))
	case json.RawMessage:
		return quote(string(v))
	case []string:
		for i := range v {
			v[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v[i]) + `"`
		}
		return quote("{" + strings.Join(v, ",") + "}")
	case []int64:
		parts := make([]string, len(v))
		for i, n := range v {
			parts[i] = fmt.Sprint(n)
		}
		return quote("{" + strings.Join(parts, ",") + "}")
	case bool, int, int16, int32, int64:
		return fmt.Sprint(v)
	case *int64:
		if v == nil {
			return "NULL"
		}
		return fmt.Sprint(*v)
	case *string:
		if v == nil {
			return "NULL"
		}
		return quote(*v)
	case time.Time: // a date or a timestamptz parameter: PostgreSQL reads either from ISO 8601
		return quote(v.UTC().Format(time.RFC3339Nano))
	}
	require.Failf(t, "no literal", "argument of type %T", v)
	return ""
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
