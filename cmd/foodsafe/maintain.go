package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/app"
	"github.com/foodsafe/foodsafe/internal/blob"
	"github.com/foodsafe/foodsafe/internal/cmdline"
	"github.com/foodsafe/foodsafe/internal/maintain"
	"github.com/foodsafe/foodsafe/internal/telemetry"
	"github.com/foodsafe/foodsafe/internal/telemetry/stores"
)

// maintainCmd runs the storage jobs outside `serve`: once (from cron, with
// FOODSAFE_MAINTENANCE_INTERVAL=0 on the servers) or on its own schedule.
// It takes the same per-job locks as `serve`, so running both is safe.
func maintainCmd() *cobra.Command {
	var once, dryRun bool
	cmd := &cobra.Command{
		Use:   "maintain [--once] [--dry-run]",
		Short: "Compact the change log, rotate audit partitions, delete unreferenced files (what serve does every FOODSAFE_MAINTENANCE_INTERVAL)",
		Long: "Runs the maintenance jobs: change-log compaction (FOODSAFE_COMPACT_AFTER), audit partitions " +
			"(created a week ahead, dropped after FOODSAFE_AUDIT_RETENTION) and file collection (bytes no live asset or " +
			"delivery image has used for FOODSAFE_BLOB_GRACE). Without --once it runs them every " +
			"FOODSAFE_MAINTENANCE_INTERVAL until SIGINT/SIGTERM. --dry-run reports what the jobs would change and changes nothing.",
		Args: cmdline.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := loadConfig()
			if err != nil {
				return err
			}
			if dryRun && !once {
				return cmdline.Usagef("--dry-run needs --once")
			}
			if !once && cfg.MaintenanceInterval == 0 {
				return cmdline.Usagef("FOODSAFE_MAINTENANCE_INTERVAL is 0: use --once, or set an interval")
			}
			// Each run of each job is a trace of its own when the OTEL_*
			// variables turn tracing on, as under serve.
			tr, err := telemetry.Setup(cmd.Context(), "foodsafe", log)
			if err != nil {
				return err
			}
			defer func() { _ = tr.Shutdown(context.WithoutCancel(cmd.Context())) }()
			st, err := openStore(cmd.Context(), stores.PGX(tr))
			if err != nil {
				return err
			}
			defer st.Close()
			set := app.MaintenanceSettings(cfg)
			set.DryRun = dryRun
			interval := cfg.MaintenanceInterval
			if once {
				interval = 0
			}
			// The collector only deletes: no download URL is signed here.
			where := blob.Settings{URL: cfg.BlobURL, Dir: cfg.BlobDir}
			if tr.On() {
				where.Transport = func(rt http.RoundTripper) http.RoundTripper { return tr.HTTPTransport(rt, stores.S3SpanName) }
			}
			blobs, err := blob.Open(cmd.Context(), where)
			if err != nil {
				return fmt.Errorf("file store %s: %w", blob.Describe(where), err)
			}
			r := maintain.New(st, blobs, log, nil, set, interval, nil)
			if !once {
				r.Loop(cmd.Context(), interval)
				return nil
			}
			if err := r.RunOnce(cmd.Context()); err != nil {
				return fmt.Errorf("maintenance: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "run every job once and exit")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be compacted or dropped; change nothing (with --once)")
	return cmd
}
