package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/ids"
)

func restaurantsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "restaurants", Short: "Enable restaurants for capture"}
	var name string
	add := &cobra.Command{
		Use:   "add ID",
		Short: "Enable a restaurant (idempotent); only enabled restaurants can be granted",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !ids.Valid(args[0]) {
				return usagef("%q is not a valid restaurant id (1-200 chars: letters, digits, . _ : -; starting with a letter or digit)", args[0])
			}
			st, err := openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			var n *string
			if cmd.Flags().Changed("name") {
				n = &name
			}
			r, err := st.RestaurantAdd(cmd.Context(), args[0], n)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "restaurant %s enabled since %s\n", r.ID, formatTime(&r.EnabledAt))
			return nil
		},
	}
	add.Flags().StringVar(&name, "name", "", "operator-facing label")
	cmd.AddCommand(add)
	return cmd
}
