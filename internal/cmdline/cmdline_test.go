package cmdline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// Every way a command line ends maps to its exit status, and every failure
// is written after the binary's name.
func TestRunExitStatus(t *testing.T) {
	errTarget := errors.New("no such target")
	newRoot := func() *cobra.Command {
		root := &cobra.Command{Use: "tool", SilenceUsage: true, SilenceErrors: true}
		root.SetFlagErrorFunc(FlagError)
		for name, err := range map[string]error{
			"ok":     nil,
			"usage":  Usagef("--to is required"),
			"target": fmt.Errorf("open: %w", errTarget),
			"broken": errors.New("database down"),
		} {
			root.AddCommand(&cobra.Command{Use: name, Args: ExactArgs(0), RunE: func(*cobra.Command, []string) error { return err }})
		}
		return root
	}
	for _, c := range []struct {
		args   []string
		status int
		stderr string
	}{
		{[]string{"ok"}, 0, ""},
		{[]string{"usage"}, 2, "tool: --to is required\n"},
		{[]string{"ok", "extra"}, 2, "tool: accepts 0 arg(s), received 1\n"},
		{[]string{"ok", "--nope"}, 2, "tool: unknown flag: --nope\n"},
		{[]string{"nope"}, 2, "tool: unknown command \"nope\" for \"tool\"\n"},
		{[]string{"target"}, 2, "tool: open: no such target\n"},
		{[]string{"broken"}, 1, "tool: database down\n"},
	} {
		var stderr bytes.Buffer
		require.Equal(t, c.status, Run(context.Background(), newRoot(), c.args, &stderr, errTarget), "%v", c.args)
		require.Equal(t, c.stderr, stderr.String(), "%v", c.args)
	}
}
