// Command foodsafe-sync keeps a correct, resumable mirror of everything an
// API key can read, in SQLite or PostgreSQL, through the public partner API
// only (internal/mirror and the packages under it). The key comes from FOODSAFE_API_KEY, never from a
// flag. Exit status: 0 success, 1 failure, 2 bad command-line input.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/cmdline"
	"github.com/foodsafe/foodsafe/internal/mirror"
	"github.com/foodsafe/foodsafe/internal/mirror/export"
	"github.com/foodsafe/foodsafe/internal/mirror/partnerapi"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// keyEnv is the only place the key is read from.
const keyEnv = "FOODSAFE_API_KEY"

// run executes one command line and returns the exit status.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	// A target that cannot be used is bad input too: nothing was synced.
	return cmdline.Run(ctx, newRoot(getenv, stdout, stderr), args, stderr, targets.ErrTarget)
}

// newRoot builds the command tree; the CLI reference is generated from it.
func newRoot(getenv func(string) string, stdout, stderr io.Writer) *cobra.Command {
	root := syncCmd(getenv, stdout, stderr)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(cmdline.FlagError)
	root.AddCommand(statusCmd(stdout), exportCmd(stdout), docsCmd())
	return root
}

type syncFlags struct {
	api, to, filesDir, since, tombstones string
	restaurants, collections             []string
	files, once, json                    bool
	every, overlap, deadline             time.Duration
	maxFailures                          int
	refusedKey                           string
}

func syncCmd(getenv func(string) string, stdout, stderr io.Writer) *cobra.Command {
	var f syncFlags
	cmd := &cobra.Command{
		Use:   "foodsafe-sync --api URL --to TARGET [--restaurant ID ...] [--collections a,b] [--files] [--once | --every 5m]",
		Short: "Mirror everything a foodsafe API key can read into SQLite or PostgreSQL",
		Long: `Mirror everything a foodsafe API key can read into SQLite or PostgreSQL.

The key is read from FOODSAFE_API_KEY (never from a flag: flags end up in
shell history and process lists). TARGET is sqlite:PATH or a postgres:// URL;
the schema is created on first run. Each page is applied in one transaction
with the cursor that follows it, so an interrupted run resumes where it
stopped. See docs/partners-sync.md, "Mirroring with foodsafe-sync".`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cmdline.Usagef("unexpected argument %q", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSync(cmd.Context(), cmd, f, getenv, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.api, "api", "", "base URL of the API, e.g. https://api.example.com (required)")
	fl.StringVar(&f.to, "to", "", "where to mirror: sqlite:PATH or postgres://... (required)")
	fl.StringArrayVar(&f.restaurants, "restaurant", nil, "restaurant to mirror (repeatable; default: every restaurant the key reaches)")
	fl.StringSliceVar(&f.collections, "collections", nil, "collections to mirror, comma-separated; \"deliveries\" names the deliveries (default: everything the key reads)")
	fl.BoolVar(&f.files, "files", false, "also download every asset and delivery image, verified by SHA-256, once per digest")
	fl.StringVar(&f.filesDir, "files-dir", "foodsafe-files", "directory of downloaded files, content-addressed (sha256/ab/abcd...)")
	fl.BoolVar(&f.once, "once", false, "sync once and exit (the default)")
	fl.DurationVar(&f.every, "every", 0, "sync again this long after each run ends, until interrupted (e.g. 5m)")
	fl.DurationVar(&f.deadline, "deadline", 5*time.Minute, "stop a run (each run of --every) still going after this long: exit 1, or with --every try again at the next interval; the pages applied stay (0: no deadline)")
	fl.IntVar(&f.maxFailures, "max-failures", 3, "stop a run, as --deadline does, once this many requests in a row have failed after their own retries (0: no limit)")
	fl.DurationVar(&f.overlap, "overlap", time.Hour, "ignored: deliveries follow the server's receive-order changes cursor, which misses no late upload (kept so existing command lines run)")
	fl.StringVar(&f.since, "deliveries-since", "1970-01-01", "deliveries: those that occurred before it are not mirrored (YYYY-MM-DD or epoch milliseconds)")
	fl.StringVar(&f.tombstones, "tombstones", "mark", "what a deleted record does to its row: mark (keep the row and its last data, deleted = true) or delete")
	fl.BoolVar(&f.json, "json", false, "progress as JSON lines on standard output")
	// A key given as a flag is refused, never used (its value is not echoed).
	for _, name := range []string{"key", "api-key", "token"} {
		fl.StringVar(&f.refusedKey, name, "", "refused: give the key in "+keyEnv)
		_ = fl.MarkHidden(name)
	}
	return cmd
}

// runSync checks the command line, builds the client, the progress
// display and the target, and runs the syncer once or every --every.
func runSync(ctx context.Context, cmd *cobra.Command, f syncFlags, getenv func(string) string, stdout, stderr io.Writer) error {
	key, opts, err := checkSync(cmd, f, getenv)
	if err != nil {
		return err
	}
	tty := !f.json && isTerminal(stderr)
	level := slog.LevelInfo
	if tty {
		level = slog.LevelWarn // the table says the rest
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	stopTracing, err := startTracing(ctx, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	client, err := partnerapi.NewClient(f.api, key, log)
	if err != nil {
		return cmdline.Usage(err)
	}
	client.Persistent = f.every > 0
	var prog mirror.Progress = mirror.LogProgress{Log: log}
	switch {
	case f.json:
		prog = mirror.NewJSONProgress(stdout)
	case tty:
		prog = mirror.NewTTYProgress(stderr)
	}
	client.OnWait = prog.Wait
	tg, err := targets.Open(ctx, f.to)
	if err != nil {
		return err
	}
	defer tg.Close()
	if err := tg.Lock(ctx); err != nil {
		return err
	}
	if err := tg.SetTombstoneMode(ctx, opts.Tombstones); err != nil {
		return err
	}
	return repeat(ctx, mirror.NewSyncer(client, tg, opts, log, prog), f.every, log)
}

// checkSync reads the sync's command line into the key and the syncer's
// options, or says what is wrong with it (before anything is sent).
func checkSync(cmd *cobra.Command, f syncFlags, getenv func(string) string) (string, mirror.Options, error) {
	for _, name := range []string{"key", "api-key", "token"} {
		if cmd.Flags().Changed(name) {
			return "", mirror.Options{}, cmdline.Usagef("--%s: the key is read from %s only (a flag ends up in shell history and process lists); nothing was sent", name, keyEnv)
		}
	}
	if err := checkShape(f); err != nil {
		return "", mirror.Options{}, err
	}
	key := strings.TrimSpace(getenv(keyEnv))
	if key == "" {
		return "", mirror.Options{}, cmdline.Usagef("set %s to the API key", keyEnv)
	}
	since, err := parseSince(f.since)
	if err != nil {
		return "", mirror.Options{}, cmdline.Usage(err)
	}
	var mode targets.TombstoneMode
	switch f.tombstones {
	case "mark":
	case "delete":
		mode = targets.TombstoneDelete
	default:
		return "", mirror.Options{}, cmdline.Usagef("--tombstones must be mark or delete, not %q", f.tombstones)
	}
	return key, mirror.Options{
		Restaurants: f.restaurants, Collections: f.collections, Files: f.files, FilesDir: f.filesDir,
		Tombstones: mode, Overlap: f.overlap, DeliveriesSince: since,
		Deadline: f.deadline, MaxFailures: f.maxFailures,
	}, nil
}

// checkShape checks the flags that need nothing but themselves.
func checkShape(f syncFlags) error {
	switch {
	case f.api == "" || f.to == "":
		return cmdline.Usagef("--api and --to are required (see --help)")
	case f.once && f.every > 0:
		return cmdline.Usagef("--once and --every exclude each other")
	case f.every < 0 || f.overlap < 0 || f.deadline < 0 || f.maxFailures < 0:
		return cmdline.Usagef("--every, --overlap, --deadline and --max-failures must not be negative")
	case slices.Contains(f.restaurants, ""):
		return cmdline.Usagef("--restaurant must not be empty")
	}
	return nil
}

// repeat runs s once, or with every > 0 again that long after each run
// ends until interrupted or the key is refused.
func repeat(ctx context.Context, s *mirror.Syncer, every time.Duration, log *slog.Logger) error {
	for {
		_, err := tracedRun(ctx, s)
		switch {
		case ctx.Err() != nil && every > 0:
			return nil // stopped by a signal: the page in flight was rolled back
		case ctx.Err() != nil:
			return errors.New("interrupted; " + s.NextRun())
		case err != nil && (every == 0 || mirror.IsFatal(err)):
			return err
		case err != nil:
			log.Error("sync run failed; trying again at the next interval", "error", err.Error())
		}
		if every == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// parseSince reads YYYY-MM-DD (UTC midnight) or epoch milliseconds.
func parseSince(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return 0, fmt.Errorf("--deliveries-since %q: give YYYY-MM-DD or epoch milliseconds", s)
	}
	return max(t.UnixMilli(), 0), nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func statusCmd(stdout io.Writer) *cobra.Command {
	var to string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status --to TARGET",
		Short: "Print what a target mirrors and when each stream last synced",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return cmdline.Usagef("--to is required")
			}
			t, err := targets.Open(cmd.Context(), to)
			if err != nil {
				return err
			}
			defer t.Close()
			st, err := t.Status(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "RESTAURANT\tSTREAM\tROWS\tDELETED\tLAST SYNCED (UTC)\tSTATE\tLAST ERROR")
			for _, s := range st.Streams {
				last := "never"
				if s.LastSyncedAt != nil {
					last = time.UnixMilli(*s.LastSyncedAt).UTC().Format("2006-01-02 15:04:05")
				}
				state := "full walk needed"
				switch {
				case s.Stream == "files":
					state = "-"
				case s.InProgress:
					state = "in progress"
				case s.Incremental:
					state = "incremental"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", s.Restaurant, s.Stream, s.Rows, s.Deleted, last, state, s.LastError)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdout, "files: %d (%d bytes)\n", st.Files, st.FileBytes)
			return err
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the target: sqlite:PATH or postgres://...")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func exportCmd(stdout io.Writer) *cobra.Command {
	var from, format, out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "export --from TARGET --out DIR [--format parquet|csv]",
		Short: "Write every typed relation of a mirror, and its files tables, into DIR, one Parquet (or CSV) file each",
		Long: `Write every typed relation of a mirror into DIR, one file per relation
(typed_deliveries.parquet, ...), and the tables files and file_links
(files.parquet, file_links.parquet: which file each record and delivery
photograph has, empty unless the sync ran with --files), with the columns
and types, all read from one snapshot of the mirror. TARGET is a mirror foodsafe-sync made,
as given to --to; it may be read while a sync runs. The Parquet files use
types DuckDB, pandas/pyarrow and Spark read natively. See
docs/partners-sync.md, "Analysing the mirror".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || out == "" {
				return cmdline.Usagef("--from and --out are required (see --help)")
			}
			f := export.Format(format)
			if f != export.Parquet && f != export.CSV {
				return cmdline.Usagef("--format must be parquet or csv, not %q", format)
			}
			t, err := targets.OpenExisting(cmd.Context(), from)
			if err != nil {
				return err
			}
			defer t.Close()
			files, err := export.Write(cmd.Context(), t, f, out)
			if err != nil {
				return fmt.Errorf("exporting %s: %w", t.Where, err)
			}
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(files)
			}
			tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "RELATION\tROWS\tBYTES\tFILE")
			for _, e := range files {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", e.Relation, e.Rows, e.Bytes, e.File)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the mirror: sqlite:PATH or postgres://... (as given to --to)")
	cmd.Flags().StringVar(&format, "format", "parquet", "parquet or csv")
	cmd.Flags().StringVar(&out, "out", "", "directory to write the files into (created if missing; files of the same names are replaced)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was written as JSON")
	return cmd
}
