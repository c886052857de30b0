package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/cmdline"
	"github.com/foodsafe/foodsafe/internal/store"
)

// openStore connects the admin commands to DATABASE_URL; tracer, when
// given (maintain, with tracing on), sees its statements.
func openStore(ctx context.Context, tracer ...pgx.QueryTracer) (*store.Store, error) {
	cfg, _, err := loadConfig()
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, tracer...)
	if err != nil {
		return nil, err
	}
	if err := st.Ping(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("database %s: %w", store.RedactURL(cfg.DatabaseURL), err)
	}
	return st, nil
}

// printJSON writes v as every --json listing does: indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newTable starts the table of an admin listing: header's tab-separated
// column names, then the rows written to it, aligned when it is flushed.
func newTable(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}

// adminError turns the store's client errors (unknown restaurant or key)
// into usage errors: exit status 2, nothing written.
func adminError(err error) error {
	if e, ok := apperr.As(err); ok && (e.Code == apperr.Invalid || e.Code == apperr.NotFound) {
		return cmdline.Usage(fmt.Errorf("%s", e.Detail))
	}
	return err
}

// parseDuration accepts Go durations plus whole days ("30d").
func parseDuration(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("invalid duration %q (use e.g. 90d, 720h, 30m)", s)
	}
	return v, nil
}

func formatTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
