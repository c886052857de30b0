// Command foodsafe is the whole service in one binary: the HTTP API
// (`serve`), schema migrations (`migrate`) and the provider's admin tools.
// Exit status: 0 success, 1 failure, 2 bad command-line input (nothing was
// written).
package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/foodsafe/foodsafe/internal/version"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// usageError marks bad input: the command wrote nothing and exits with 2.
type usageError struct{ error }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// run executes one command line and returns the exit status. Everything
// goes to the given streams, so main stays a one-liner.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "foodsafe:", err)
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return 2
	}
	return 1
}

// newRoot builds the command tree; the CLI reference is generated from it.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "foodsafe",
		Short:         "Partner API of the restaurant food-safety records service",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version: which build a container or host runs.
		Version: version.Version + " (commit " + version.Commit + ", " + version.GoVersion() + ")",
	}
	root.SetVersionTemplate("foodsafe {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(serveCmd(), maintainCmd(), migrateCmd(), restaurantsCmd(), keysCmd(), auditCmd(), openapiCmd(), demoCmd(), docsCmd())
	return root
}

// isCobraUsage recognises cobra's untyped "unknown command" error.
func isCobraUsage(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command")
}

// exactArgs is cobra.ExactArgs with our exit status 2.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// loadConfig reads the environment and builds the JSON logger every
// command shares.
func loadConfig() (config.Config, *slog.Logger, error) {
	cfg, err := config.Load()
	if err != nil {
		return cfg, nil, err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	return cfg, log, nil
}
