package main

import (
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/app"
	"github.com/foodsafe/foodsafe/internal/blob"
	"github.com/foodsafe/foodsafe/internal/cmdline"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/version"
)

func serveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API until SIGINT/SIGTERM",
		Args:  cmdline.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, log, err := loadConfig()
			if err != nil {
				return err
			}
			gcPercent, memLimit := setServeGC(), setServeMemoryLimit()
			log.Info("starting", "version", version.Version, "commit", version.Commit, "gogc", gcPercent, "gomemlimit", memLimit,
				"database", store.RedactURL(cfg.DatabaseURL), "rate_limit_per_minute", cfg.RateLimit,
				"rate_limit_shared", cfg.RedisURL != "", "file_store", blob.Describe(blob.Settings{URL: cfg.BlobURL, Dir: cfg.BlobDir}),
				"metrics_addr", cfg.MetricsAddr)
			a, err := app.New(ctx, cfg, log, app.Options{})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", cfg.Addr)
			if err != nil {
				a.Store.Close()
				return listenError("FOODSAFE_ADDR", "the API", err)
			}
			// The operator listener (/metrics, /debug/pprof/) exists only
			// when FOODSAFE_METRICS_ADDR is not empty.
			var opsLn net.Listener
			if cfg.MetricsAddr != "" {
				if opsLn, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
					_ = ln.Close()
					a.Store.Close()
					return listenError("FOODSAFE_METRICS_ADDR", "the operator listener (/metrics, /debug/pprof/); the empty string turns it off", err)
				}
			}
			return a.Serve(ctx, ln, opsLn)
		},
	}
}

// listenError names the variable that moves a listener whose address
// cannot be bound (taken by another process, often): the operator's fix
// is one setting away.
func listenError(variable, what string, err error) error {
	return fmt.Errorf("%s: %w; set %s to a free address for %s", variable, err, variable, what)
}

// serveGCPercent is the garbage collector's target for serve. A server's
// live heap is small (tens of MiB) and its garbage per request large (a
// walk page is ~125 KB), so Go's default of 100 collects very often: at
// 400 the walk page's throughput rose 15% under make bench-http (3,342 ->
// 3,868 req/s) for a larger peak RSS (docs/performance.md). GOGC, when
// set, is the operator's choice and wins.
const serveGCPercent = config.ServeGCPercent

// serveMemoryLimit is the soft memory limit serve sets unless GOMEMLIMIT
// is set. GOGC=400 lets the heap grow to five times what is live, which
// is cheap while what is live is tens of MiB, and not when answers carry
// records of 1 MiB: under make load-hostile's pages attack serve peaked
// at 512 MB with GOGC=400, 214 MB with GOGC=100 and about 300 MB with
// GOGC=400 and this limit (docs/performance.md). Below the limit the
// collector paces by GOGC alone, so small answers keep GOGC=400's
// throughput; near it, it collects as often as it must (Go caps what it
// then spends at half the CPU).
const serveMemoryLimit = config.ServeMemoryLimit

// setServeMemoryLimit applies serveMemoryLimit unless GOMEMLIMIT is set,
// and says which.
func setServeMemoryLimit() string {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		return v + " (GOMEMLIMIT)"
	}
	debug.SetMemoryLimit(serveMemoryLimit)
	return strconv.Itoa(serveMemoryLimit>>20) + "MiB"
}

// setServeGC applies serveGCPercent unless GOGC is set, and says which.
func setServeGC() string {
	if v := os.Getenv("GOGC"); v != "" {
		return v + " (GOGC)"
	}
	debug.SetGCPercent(serveGCPercent)
	return strconv.Itoa(serveGCPercent)
}
