package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/clientip"
	"github.com/foodsafe/foodsafe/internal/cmdline"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/store"
)

func auditCmd() *cobra.Command {
	var key, restaurant, since string
	var limit int32
	var counts bool
	cmd := &cobra.Command{
		Use:   "audit [--key PUBLIC_ID] [--restaurant ID] [--since DURATION] [--limit N] [--counts]",
		Short: "Print recent audit events, newest first",
		Long: "Print recent audit events, newest first. Requests that reached no key's data (refused before " +
			"authentication, rate limited, unmatched paths, the documentation, refused downloads) are counted by shape " +
			"instead, one row per minute, client IP, method, route, status, outcome and key: --counts prints those.",
		Args: cmdline.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := parseDuration(since)
			if err != nil {
				return cmdline.Usage(err)
			}
			if limit < 1 || limit > 100000 {
				return cmdline.Usagef("--limit must be between 1 and 100000")
			}
			// A filter that cannot match anything is a typo, not an empty
			// trail.
			if key != "" {
				if err := requirePublicID(key); err != nil {
					return err
				}
			}
			if restaurant != "" && !ids.Valid(restaurant) {
				return cmdline.Usagef("%q is not a valid restaurant id", restaurant)
			}
			if counts && restaurant != "" {
				return cmdline.Usagef("--counts has no --restaurant: the requests it counts name no restaurant")
			}
			st, err := openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			if counts {
				return printCounts(cmd, st, time.Now().Add(-d), key, limit)
			}
			events, err := st.AuditRecent(cmd.Context(), store.AuditFilter{
				KeyPublicID: key, RestaurantID: restaurant, Since: time.Now().Add(-d), Limit: limit})
			if err != nil {
				return err
			}
			w := newTable(cmd.OutOrStdout(), "TIME\tKEY\tRESTAURANT\tMETHOD\tROUTE\tSTATUS\tOUTCOME\tCLIENT_IP\tREQUEST_ID")
			for _, e := range events {
				ip := "-"
				if e.ClientIP.IsValid() {
					ip = e.ClientIP.String()
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", e.At.UTC().Format(time.RFC3339Nano),
					dash(e.KeyPublicID), dash(e.RestaurantID), e.Method, e.Route, e.Status, dash(e.Outcome), ip, e.RequestID)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "only events of this key public id")
	cmd.Flags().StringVar(&restaurant, "restaurant", "", "only events on this restaurant")
	cmd.Flags().StringVar(&since, "since", "24h", "how far back, e.g. 15m, 24h, 7d")
	cmd.Flags().Int32Var(&limit, "limit", 100, "at most this many events")
	cmd.Flags().BoolVar(&counts, "counts", false, "print the requests counted by shape (per minute) instead of the events")
	return cmd
}

// printCounts prints the shapes counted since since, newest minute first.
func printCounts(cmd *cobra.Command, st *store.Store, since time.Time, key string, limit int32) error {
	counts, err := st.AuditCountsRecent(cmd.Context(), since, key, limit)
	if err != nil {
		return err
	}
	w := newTable(cmd.OutOrStdout(), "MINUTE\tCLIENT\tMETHOD\tROUTE\tSTATUS\tOUTCOME\tKEY\tREQUESTS")
	for _, c := range counts {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\n", c.Minute.UTC().Format(time.RFC3339), clientip.Key(c.Client), c.Method, c.Route,
			c.Status, dash(c.Outcome), dash(c.KeyPublicID), c.Requests)
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
