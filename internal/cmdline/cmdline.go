// Package cmdline is what the command lines of both binaries share: how a
// command line ends (its exit status) and the error that marks bad input.
package cmdline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// UsageError marks bad input: the command did nothing, and the binary
// exits with status 2.
type UsageError struct{ error }

// Usage marks err as bad input.
func Usage(err error) error { return UsageError{err} }

// Usagef is bad input described as fmt.Errorf describes an error.
func Usagef(format string, args ...any) error { return UsageError{fmt.Errorf(format, args...)} }

// FlagError is the flag error function of both roots: a flag that does
// not parse is bad input.
func FlagError(_ *cobra.Command, err error) error { return UsageError{err} }

// ExactArgs is cobra.ExactArgs, whose refusal is bad input.
func ExactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return UsageError{err}
		}
		return nil
	}
}

// Run executes one command line of root and returns the exit status: 0;
// 2 for bad input (a UsageError, an unknown command, or an error that is
// one of usage by errors.Is); 1 for any other failure. A failure is
// written to stderr after the binary's name.
func Run(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer, usage ...error) int {
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", root.Name(), err)
	var ue UsageError
	// cobra's "unknown command" error has no type of its own.
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
		return 2
	}
	for _, u := range usage {
		if errors.Is(err, u) {
			return 2
		}
	}
	return 1
}
