package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/cmdline"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/httpapi"
	"github.com/foodsafe/foodsafe/internal/openapi"
	"github.com/foodsafe/foodsafe/internal/validate"
	"github.com/foodsafe/foodsafe/internal/version"
)

func openapiCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "openapi",
		Short: "Print the OpenAPI 3.1 document the server serves at /openapi.json",
		Args:  cmdline.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load()
			if err != nil {
				return err
			}
			s, err := validate.Load()
			if err != nil {
				return err
			}
			doc, err := httpapi.Document(s, openapi.Info{Version: version.Version, Server: openapi.ServerURL(cfg.BaseURL)})
			if err != nil {
				return err
			}
			b, err := json.MarshalIndent(doc, "", "  ")
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
			return err
		},
	}
}
