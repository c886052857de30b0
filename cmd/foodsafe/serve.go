package main

import (
	"net"

	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/httpapi"
	"github.com/foodsafe/foodsafe/internal/server"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/version"
)

func serveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API until SIGINT/SIGTERM",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, log, err := loadConfig()
			if err != nil {
				return err
			}
			st, err := store.Open(ctx, cfg.DatabaseURL)
			if err != nil {
				return err
			}
			defer st.Close()
			log.Info("starting", "version", version.Version, "commit", version.Commit,
				"database", store.RedactURL(cfg.DatabaseURL))

			h := httpapi.New(httpapi.Deps{Config: cfg, Store: st, Log: log})
			ln, err := net.Listen("tcp", cfg.Addr)
			if err != nil {
				return err
			}
			return server.Serve(ctx, ln, h, server.Options{
				ReadHeaderTimeout: cfg.ReadHeaderTimeout,
				ReadTimeout:       cfg.ReadTimeout,
				WriteTimeout:      cfg.WriteTimeout,
				IdleTimeout:       cfg.IdleTimeout,
				ShutdownTimeout:   cfg.ShutdownTimeout,
			}, log)
		},
	}
}
