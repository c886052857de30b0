package store_test

import (
	"os"
	"testing"

	"github.com/foodsafe/foodsafe/internal/testdb"
)

// TestMain stops a PostgreSQL container the harness started for this
// binary when it exits, also where Ryuk does not run.
func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }
