// Command foodsafe is the whole service in one binary: the HTTP API
// (`serve`), schema migrations (`migrate`) and the provider's admin tools.
// Exit status: 0 success, 1 failure, 2 bad command-line input (nothing was
// written).
package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/cmdline"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status. Everything
// goes to the given streams, so main stays a one-liner.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return cmdline.Run(ctx, newRoot(stdout, stderr), args, stderr)
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
	root.SetFlagErrorFunc(cmdline.FlagError)
	root.AddCommand(serveCmd(), maintainCmd(), migrateCmd(), restaurantsCmd(), keysCmd(), auditCmd(), openapiCmd(), demoCmd(), docsCmd())
	return root
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
