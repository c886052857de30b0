package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/cmdline"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/wire"
)

func restaurantsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "restaurants", Short: "Enable restaurants for capture and list them"}
	cmd.AddCommand(restaurantsAddCmd(), restaurantsListCmd())
	return cmd
}

// parseInstant reads an instant as epoch milliseconds (the wire form) or
// RFC 3339.
func parseInstant(s string) (time.Time, error) {
	if ms, err := wire.ParseMillis(s); err == nil {
		return time.UnixMilli(int64(ms)), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("invalid time %q: use epoch milliseconds or RFC 3339 (2026-01-31T08:00:00Z)", s)
}

func restaurantsAddCmd() *cobra.Command {
	var name, since string
	add := &cobra.Command{
		Use:   "add ID [--name NAME] [--enabled-since TIME]",
		Short: "Enable a restaurant (idempotent); only enabled restaurants can be granted",
		Long: "Enables capture for a restaurant. Event records (temperatures, cycles, checks, labels...) and deliveries " +
			"captured before --enabled-since (default: now) are refused: the service holds no backfill. On an enabled " +
			"restaurant, --name and --enabled-since change what they name and say so; without them nothing changes.",
		Args: cmdline.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !ids.Valid(args[0]) {
				return cmdline.Usagef("%q is not a valid restaurant id (1-200 chars: letters, digits, . _ : -; starting with a letter or digit)", args[0])
			}
			var change store.RestaurantChange
			if cmd.Flags().Changed("name") {
				change.Name = &name
			}
			if cmd.Flags().Changed("enabled-since") {
				t, err := parseInstant(since)
				if err != nil {
					return cmdline.Usage(err)
				}
				change.EnabledAt = &t
			}
			st, err := openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			before, err := st.RestaurantGet(cmd.Context(), args[0])
			existed := err == nil
			if err != nil && !apperr.Is(err, apperr.NotFound) {
				return err
			}
			r, err := st.RestaurantAdd(cmd.Context(), args[0], change)
			if err != nil {
				return err
			}
			w := cmd.ErrOrStderr()
			switch {
			case !existed:
				fmt.Fprintf(w, "restaurant %s enabled since %s\n", r.ID, formatTime(&r.EnabledAt))
			case change.Name == nil && change.EnabledAt == nil:
				fmt.Fprintf(w, "restaurant %s was already enabled (since %s); nothing changed\n", r.ID, formatTime(&r.EnabledAt))
			default:
				if change.Name != nil {
					fmt.Fprintf(w, "restaurant %s renamed from %q to %q\n", r.ID, deref(before.Name), deref(r.Name))
				}
				if change.EnabledAt != nil {
					fmt.Fprintf(w, "restaurant %s enabled since %s (was %s)\n", r.ID, formatTime(&r.EnabledAt), formatTime(&before.EnabledAt))
				}
			}
			return nil
		},
	}
	add.Flags().StringVar(&name, "name", "", "operator-facing label")
	add.Flags().StringVar(&since, "enabled-since", "", "when capture really started: epoch milliseconds or RFC 3339 (default now)")
	return add
}

// restaurantView is the JSON form of `restaurants list --json`.
type restaurantView struct {
	ID        string  `json:"id"`
	Name      *string `json:"name"`
	EnabledAt string  `json:"enabledAt"`
	// EnabledAtMillis is the same instant in the API's wire form.
	EnabledAtMillis string `json:"enabledAtMillis"`
}

func restaurantsListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List enabled restaurants with their label and enablement time (operators only; never in the API)",
		Args:  cmdline.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			rs, err := st.RestaurantList(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				views := make([]restaurantView, len(rs))
				for i, r := range rs {
					views[i] = restaurantView{ID: r.ID, Name: r.Name, EnabledAt: formatTime(&r.EnabledAt),
						EnabledAtMillis: strconv.FormatInt(r.EnabledAt.UnixMilli(), 10)}
				}
				return printJSON(cmd.OutOrStdout(), views)
			}
			w := newTable(cmd.OutOrStdout(), "ID\tNAME\tENABLED_SINCE")
			for _, r := range rs {
				fmt.Fprintf(w, "%s\t%s\t%s\n", r.ID, dash(deref(r.Name)), formatTime(&r.EnabledAt))
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
