package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/cmdline"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/store"
)

func keysCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "Issue, inspect, change and revoke partner keys"}
	cmd.AddCommand(keysCreateCmd(), keysListCmd(), keysRevokeCmd(), keysGrantCmd(), keysUngrantCmd(), keysScopesCmd())
	return cmd
}

// parseGrants validates every --grant before anything is written.
func parseGrants(specs []string) ([]auth.Grant, error) {
	if len(specs) == 0 {
		return nil, cmdline.Usagef("at least one --grant RESTAURANT=SCOPE[,SCOPE...] is required")
	}
	out := make([]auth.Grant, 0, len(specs))
	for _, s := range specs {
		g, err := auth.ParseGrantSpec(s)
		if err != nil {
			return nil, cmdline.Usage(err)
		}
		out = append(out, g)
	}
	return out, nil
}

func keysCreateCmd() *cobra.Command {
	var label, expiresIn string
	var grants []string
	cmd := &cobra.Command{
		Use:   "create --name LABEL --grant RESTAURANT=SCOPE[,SCOPE...] [--grant ...] [--expires-in DURATION]",
		Short: "Create a key; prints the full key alone on stdout, once",
		Args:  cmdline.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(label) == "" {
				return cmdline.Usagef("--name LABEL is required")
			}
			gs, err := parseGrants(grants)
			if err != nil {
				return err
			}
			var expires *time.Time
			if expiresIn != "" {
				d, err := parseDuration(expiresIn)
				if err != nil {
					return cmdline.Usage(err)
				}
				t := time.Now().Add(d)
				expires = &t
			}
			st, err := openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			issued := auth.NewKey()
			info, err := st.KeyCreate(cmd.Context(), issued, label, expires, gs)
			if err != nil {
				return adminError(err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), issued.Full)
			fmt.Fprintf(cmd.ErrOrStderr(), "created key %s (%s), expires %s, grants %s\n",
				info.PublicID, info.Label, formatTime(info.ExpiresAt), grantsText(info.Grants))
			fmt.Fprintln(cmd.ErrOrStderr(), "the key above is shown only now; store it in the partner's secret store")
			return nil
		},
	}
	cmd.Flags().StringVar(&label, "name", "", "label identifying the partner and purpose (required)")
	cmd.Flags().StringArrayVar(&grants, "grant", nil, "RESTAURANT=SCOPE[,SCOPE...]; repeatable (at least one)")
	cmd.Flags().StringVar(&expiresIn, "expires-in", "", "optional lifetime, e.g. 90d or 720h")
	return cmd
}

// keyView is the JSON form of `keys list --json`; it has no secret to show.
type keyView struct {
	PublicID  string              `json:"publicId"`
	Label     string              `json:"label"`
	State     string              `json:"state"`
	CreatedAt string              `json:"createdAt"`
	ExpiresAt *string             `json:"expiresAt"`
	RevokedAt *string             `json:"revokedAt"`
	Grants    map[string][]string `json:"grants"`
}

func keysListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List keys: public ids, labels, state and grants (never secrets)",
		Args:  cmdline.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			keys, err := st.KeyList(cmd.Context())
			if err != nil {
				return err
			}
			now := time.Now()
			if asJSON {
				views := make([]keyView, 0, len(keys))
				for _, k := range keys {
					views = append(views, toKeyView(k, now))
				}
				return printJSON(cmd.OutOrStdout(), views)
			}
			w := newTable(cmd.OutOrStdout(), "PUBLIC_ID\tLABEL\tSTATE\tCREATED\tEXPIRES\tGRANTS")
			for _, k := range keys {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", k.PublicID, k.Label, k.State(now),
					formatTime(&k.CreatedAt), formatTime(k.ExpiresAt), grantsText(k.Grants))
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}

func toKeyView(k store.KeyInfo, now time.Time) keyView {
	v := keyView{PublicID: k.PublicID, Label: k.Label, State: k.State(now),
		CreatedAt: formatTime(&k.CreatedAt), Grants: map[string][]string{}}
	if k.ExpiresAt != nil {
		s := formatTime(k.ExpiresAt)
		v.ExpiresAt = &s
	}
	if k.RevokedAt != nil {
		s := formatTime(k.RevokedAt)
		v.RevokedAt = &s
	}
	for _, g := range k.Grants {
		v.Grants[g.RestaurantID] = g.Scopes
	}
	return v
}

func grantsText(gs []auth.Grant) string {
	if len(gs) == 0 {
		return "-"
	}
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.RestaurantID + "=" + strings.Join(g.Scopes, ",")
	}
	return strings.Join(parts, " ")
}

func requirePublicID(s string) error {
	if !auth.ValidPublicID(s) {
		return cmdline.Usagef("%q is not a key public id (12-32 chars of a-z0-9; the part between fsk_ and the dot)", s)
	}
	return nil
}

func keysRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke PUBLIC_ID",
		Short: "Revoke a key; every server refuses it once this returns (about a second after the commit)",
		Args:  cmdline.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requirePublicID(args[0]); err != nil {
				return err
			}
			st, err := openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			at, err := st.KeyRevoke(cmd.Context(), args[0])
			if err != nil {
				return adminError(err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "key %s revoked at %s\n", args[0], formatTime(&at))
			return nil
		},
	}
}

func keysGrantCmd() *cobra.Command {
	var grants []string
	cmd := &cobra.Command{
		Use:   "grant PUBLIC_ID --grant RESTAURANT=SCOPE[,SCOPE...] [--grant ...]",
		Short: "Add scopes to a key (idempotent)",
		Args:  cmdline.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requirePublicID(args[0]); err != nil {
				return err
			}
			gs, err := parseGrants(grants)
			if err != nil {
				return err
			}
			st, err := openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.KeyGrant(cmd.Context(), args[0], gs); err != nil {
				return adminError(err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "key %s granted %s\n", args[0], grantsText(gs))
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&grants, "grant", nil, "RESTAURANT=SCOPE[,SCOPE...]; repeatable")
	return cmd
}

func keysUngrantCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ungrant PUBLIC_ID RESTAURANT[=SCOPE,...]",
		Short: "Remove scopes (or, without scopes, the whole restaurant) from a key",
		Args:  cmdline.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requirePublicID(args[0]); err != nil {
				return err
			}
			restaurant, list, hasScopes := strings.Cut(args[1], "=")
			if !ids.Valid(restaurant) {
				return cmdline.Usagef("%q is not a valid restaurant id", restaurant)
			}
			var scopes []string
			if hasScopes {
				var err error
				if scopes, err = auth.ParseScopes(list); err != nil {
					return cmdline.Usage(err)
				}
			}
			st, err := openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			n, err := st.KeyUngrant(cmd.Context(), args[0], auth.Grant{RestaurantID: restaurant, Scopes: scopes})
			if err != nil {
				return adminError(err)
			}
			if n == 0 {
				// An unknown restaurant, or scopes the key does not hold:
				// most likely a typo, so it fails like one.
				return cmdline.Usagef("key %s holds no such grant on %s; nothing removed", args[0], restaurant)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "key %s: %d grant(s) removed on %s\n", args[0], n, restaurant)
			return nil
		},
	}
}

func keysScopesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "scopes",
		Short: "List every scope a key can be granted",
		Args:  cmdline.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range catalog.Scopes() {
				fmt.Fprintln(cmd.OutOrStdout(), s)
			}
			return nil
		},
	}
}
