package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/app"
	"github.com/foodsafe/foodsafe/internal/cmdline"
	"github.com/foodsafe/foodsafe/internal/demo"
)

func demoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Load the demo restaurant (once) and print a key holding every read scope",
		Long: "Enables restaurant " + demo.RestaurantID + ", fills every collection, deliveries of the last months with " +
			"photographs, and files, through the service's own write API; then prints a new key with every read scope " +
			"on stdout. Run again, it keeps the data and only prints a new key.",
		Args: cmdline.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, _, err := loadConfig()
			if err != nil {
				return err
			}
			// The loader makes hundreds of requests in process: no budget,
			// and only warnings in the log.
			cfg.RateLimit = 1 << 30
			log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			a, err := app.New(ctx, cfg, log, app.Options{})
			if err != nil {
				return err
			}
			defer a.Close(ctx) //nolint:errcheck
			start := time.Now()
			sum, err := demo.Load(ctx, a.Store, a.Engine, start)
			switch {
			case errors.Is(err, demo.ErrLoaded):
				fmt.Fprintf(cmd.ErrOrStderr(), "demo restaurant %s is already loaded\n", demo.RestaurantID)
			case err != nil:
				return err
			default:
				fmt.Fprintf(cmd.ErrOrStderr(), "loaded demo restaurant %s in %s: %d records, %d tombstones, %d deliveries, %d files\n",
					demo.RestaurantID, time.Since(start).Round(time.Millisecond), sum.Records, sum.Tombstones, sum.Deliveries, sum.Files)
			}
			key, err := demo.ReadKey(ctx, a.Store)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), key)
			fmt.Fprintln(cmd.ErrOrStderr(), "the key above reads everything of "+demo.RestaurantID+"; see README, \"Try it\"")
			return nil
		},
	}
}
