package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
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

// parseGrants validates every --grant, and every line of the grants file
// when one is named ("-": standard input), before anything is written.
func parseGrants(cmd *cobra.Command, specs []string, file string) ([]auth.Grant, error) {
	if len(specs) == 0 && file == "" {
		return nil, cmdline.Usagef("at least one --grant RESTAURANT=SCOPE[,SCOPE...] or a --grants-file is required")
	}
	out := make([]auth.Grant, 0, len(specs))
	for _, s := range specs {
		g, err := auth.ParseGrantSpec(s)
		if err != nil {
			return nil, cmdline.Usage(err)
		}
		out = append(out, g)
	}
	if file == "" {
		return out, nil
	}
	in := cmd.InOrStdin()
	name := "standard input"
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, cmdline.Usage(err)
		}
		defer f.Close()
		in, name = f, file
	}
	gs, err := auth.ReadGrantSpecs(in)
	if err != nil {
		return nil, cmdline.Usagef("%s: %w", name, err)
	}
	if len(gs) == 0 && len(out) == 0 {
		return nil, cmdline.Usagef("%s holds no grant", name)
	}
	return append(out, gs...), nil
}

// grantsFileUsage is the --grants-file flag's usage, for both commands.
const grantsFileUsage = "read grants from FILE (- for standard input), one RESTAURANT=SCOPE[,SCOPE...] per line as --grant takes them; " +
	"blank lines and lines starting with # are skipped; with --grant, both count"

// grantsLong is what both commands say about grants in their help.
const grantsLong = "Grants come from --grant flags and from --grants-file, one RESTAURANT=SCOPE[,SCOPE...] per line " +
	"(blank lines and # comments skipped): a key of 20,000 restaurants does not fit on a command line. Every line is " +
	"checked, and every restaurant must be enabled, before anything is written; the grants go in by batches in one " +
	"transaction."

func keysCreateCmd() *cobra.Command {
	var label, expiresIn, grantsFile string
	var grants []string
	cmd := &cobra.Command{
		Use:   "create --name LABEL (--grant RESTAURANT=SCOPE[,SCOPE...] [--grant ...] | --grants-file FILE) [--expires-in DURATION]",
		Short: "Create a key; prints the full key alone on stdout, once",
		Long:  "Creates a key with its grants in one transaction and prints the full key alone on standard output, once. " + grantsLong,
		Args:  cmdline.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(label) == "" {
				return cmdline.Usagef("--name LABEL is required")
			}
			gs, err := parseGrants(cmd, grants, grantsFile)
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
				info.PublicID, info.Label, formatTime(info.ExpiresAt), grantsSummary(info.Grants))
			fmt.Fprintln(cmd.ErrOrStderr(), "the key above is shown only now; store it in the partner's secret store")
			return nil
		},
	}
	cmd.Flags().StringVar(&label, "name", "", "label identifying the partner and purpose (required)")
	cmd.Flags().StringArrayVar(&grants, "grant", nil, "RESTAURANT=SCOPE[,SCOPE...]; repeatable (at least one, or --grants-file)")
	cmd.Flags().StringVar(&grantsFile, "grants-file", "", grantsFileUsage)
	cmd.Flags().StringVar(&expiresIn, "expires-in", "", "optional lifetime, e.g. 90d or 720h")
	return cmd
}

// keyView is the JSON form of `keys list --json`; it has no secret to show.
type keyView struct {
	PublicID        string  `json:"publicId"`
	Label           string  `json:"label"`
	State           string  `json:"state"`
	CreatedAt       string  `json:"createdAt"`
	ExpiresAt       *string `json:"expiresAt"`
	RevokedAt       *string `json:"revokedAt"`
	RestaurantCount int64   `json:"restaurantCount"`
	ScopeCount      int64   `json:"scopeCount"`
	GrantCount      int64   `json:"grantCount"`
}

const keysListLong = "Lists every key, oldest first: public id, label, state, creation and expiry, and how many " +
	"restaurants, distinct scopes and (restaurant, scope) grants it holds. Never a secret. --grants lists every " +
	"grant too, read and written a page of restaurants at a time: as text, each key is a comment line and its " +
	"grants one restaurant per line in the form --grants-file reads; as JSON (--json), each key gains \"grants\", " +
	"an object of scope lists by restaurant."

func keysListCmd() *cobra.Command {
	var asJSON, withGrants bool
	cmd := &cobra.Command{
		Use:   "list [--grants] [--json]",
		Short: "List keys: public ids, labels, state and grant counts; every grant with --grants (never secrets)",
		Long:  keysListLong,
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
			out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
			l := keyLister{st: st, w: out, now: time.Now()}
			switch {
			case asJSON && withGrants:
				err = l.jsonWithGrants(cmd.Context(), keys)
			case asJSON:
				views := make([]keyView, 0, len(keys))
				for _, k := range keys {
					views = append(views, toKeyView(k, l.now))
				}
				err = printJSON(out, views)
			case withGrants:
				err = l.textWithGrants(cmd.Context(), keys)
			default:
				w := newTable(out, "PUBLIC_ID\tLABEL\tSTATE\tCREATED\tEXPIRES\tRESTAURANTS\tSCOPES\tGRANTS")
				for _, k := range keys {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n", k.PublicID, k.Label, k.State(l.now),
						formatTime(&k.CreatedAt), formatTime(k.ExpiresAt), k.Restaurants, k.Scopes, k.Grants)
				}
				err = w.Flush()
			}
			if err != nil {
				return err
			}
			return out.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	cmd.Flags().BoolVar(&withGrants, "grants", false, "list every grant of every key too, one restaurant per line (JSON: an object by restaurant)")
	return cmd
}

func toKeyView(k store.KeySummary, now time.Time) keyView {
	v := keyView{PublicID: k.PublicID, Label: k.Label, State: k.State(now), CreatedAt: formatTime(&k.CreatedAt),
		RestaurantCount: k.Restaurants, ScopeCount: k.Scopes, GrantCount: k.Grants}
	if k.ExpiresAt != nil {
		s := formatTime(k.ExpiresAt)
		v.ExpiresAt = &s
	}
	if k.RevokedAt != nil {
		s := formatTime(k.RevokedAt)
		v.RevokedAt = &s
	}
	return v
}

// keyLister writes `keys list --grants`: each key's grants as the store
// reads them, a page at a time, so that memory holds a page and the
// buffered writer, not a key of 20,000 restaurants.
type keyLister struct {
	st  *store.Store
	w   *bufio.Writer
	now time.Time
}

// textWithGrants writes each key as a comment line, then its grants one
// restaurant per line: the lines of a key are a grants file that
// `keys create --grants-file` reads back.
func (l keyLister) textWithGrants(ctx context.Context, keys []store.KeySummary) error {
	for i, k := range keys {
		if i > 0 {
			l.w.WriteByte('\n')
		}
		fmt.Fprintf(l.w, "# key %s %q: %s, created %s, expires %s, %d restaurants, %d scopes, %d grants\n",
			k.PublicID, k.Label, k.State(l.now), formatTime(&k.CreatedAt), formatTime(k.ExpiresAt),
			k.Restaurants, k.Scopes, k.Grants)
		err := l.st.KeyGrantsEach(ctx, k, func(g auth.Grant) error {
			l.w.WriteString(g.RestaurantID)
			l.w.WriteByte('=')
			l.w.WriteString(strings.Join(g.Scopes, ","))
			return l.w.WriteByte('\n')
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// jsonWithGrants writes the JSON array of `keys list --json` with each
// key's "grants" (scope lists by restaurant) written as they are read.
func (l keyLister) jsonWithGrants(ctx context.Context, keys []store.KeySummary) error {
	l.w.WriteString("[")
	for i, k := range keys {
		head, err := json.Marshal(toKeyView(k, l.now))
		if err != nil {
			return err
		}
		if i > 0 {
			l.w.WriteString(",")
		}
		l.w.WriteString("\n  ")
		l.w.Write(head[:len(head)-1])
		l.w.WriteString(`,"grants":{`)
		first := true
		err = l.st.KeyGrantsEach(ctx, k, func(g auth.Grant) error {
			id, _ := json.Marshal(g.RestaurantID)
			scopes, err := json.Marshal(g.Scopes)
			if err != nil {
				return err
			}
			if !first {
				l.w.WriteByte(',')
			}
			first = false
			l.w.WriteString("\n    ")
			l.w.Write(id)
			l.w.WriteByte(':')
			_, err = l.w.Write(scopes)
			return err
		})
		if err != nil {
			return err
		}
		if !first {
			l.w.WriteString("\n  ")
		}
		l.w.WriteString("}}")
	}
	if len(keys) > 0 {
		l.w.WriteString("\n")
	}
	_, err := l.w.WriteString("]\n")
	return err
}

// grantsSummary is grantsText for a message: a key of 20,000 restaurants
// is named by its first few and a count.
func grantsSummary(gs []auth.Grant) string {
	const shown = 3
	if len(gs) <= 2*shown {
		return grantsText(gs)
	}
	scopes := 0
	for _, g := range gs {
		scopes += len(g.Scopes)
	}
	return fmt.Sprintf("%s and %d more restaurants (%d restaurants, %d scopes in all)", grantsText(gs[:shown]), len(gs)-shown, len(gs), scopes)
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
	var grantsFile string
	cmd := &cobra.Command{
		Use:   "grant PUBLIC_ID (--grant RESTAURANT=SCOPE[,SCOPE...] [--grant ...] | --grants-file FILE)",
		Short: "Add scopes to a key (idempotent)",
		Long: "Adds scopes to a key; scopes it holds already are left as they are. Every server honours them when it " +
			"returns (about a second after the commit). " + grantsLong,
		Args: cmdline.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requirePublicID(args[0]); err != nil {
				return err
			}
			gs, err := parseGrants(cmd, grants, grantsFile)
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
			fmt.Fprintf(cmd.ErrOrStderr(), "key %s granted %s\n", args[0], grantsSummary(gs))
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&grants, "grant", nil, "RESTAURANT=SCOPE[,SCOPE...]; repeatable")
	cmd.Flags().StringVar(&grantsFile, "grants-file", "", grantsFileUsage)
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
