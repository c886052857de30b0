package mirror

import (
	"os"
	"testing"

	"github.com/foodsafe/foodsafe/internal/testdb"
)

// TestMain lets the PostgreSQL tests of the target use the repository's
// test harness (a real server, a database per test); the engine itself
// imports nothing internal.
func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }
