package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/cmdline"
	"github.com/foodsafe/foodsafe/internal/store"
)

func migrateCmd() *cobra.Command {
	var create bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending schema migrations to DATABASE_URL and print the schema version",
		Args:  cmdline.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, log, err := loadConfig()
			if err != nil {
				return err
			}
			if create {
				made, err := store.CreateDatabase(ctx, cfg.DatabaseURL)
				if err != nil {
					return err
				}
				if made {
					log.Info("created database", "database", store.RedactURL(cfg.DatabaseURL))
				}
			}
			v, err := store.Migrate(ctx, cfg.DatabaseURL)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schema version %d\n", v)
			return nil
		},
	}
	cmd.Flags().BoolVar(&create, "create-database", false, "create the database named in DATABASE_URL if it does not exist")
	return cmd
}
