package targets

import (
	"os"
	"testing"

	"github.com/foodsafe/foodsafe/internal/testdb"
)

// TestMain lets the PostgreSQL tests of the target use the repository's
// test harness (a real server, a database per test); the target itself
// imports nothing internal but the typed layer.
func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }
