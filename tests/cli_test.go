package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
)

var (
	binDirOnce sync.Once
	binDir     string
	binDirErr  error
)

// builtCommand is one of our commands, built once per test run into a
// temporary directory (removed by TestMain): commands are contracts (exit
// status, stdout vs stderr), so they are tested as they are run.
type builtCommand struct {
	pkg  string // e.g. ../cmd/foodsafe
	once sync.Once
	path string
	err  error
}

func (b *builtCommand) binary(t testing.TB) string {
	t.Helper()
	binDirOnce.Do(func() { binDir, binDirErr = os.MkdirTemp("", "foodsafe-cli-") })
	require.NoError(t, binDirErr)
	b.once.Do(func() {
		b.path = filepath.Join(binDir, filepath.Base(b.pkg))
		if out, err := exec.Command("go", "build", "-o", b.path, b.pkg).CombinedOutput(); err != nil {
			b.err = errors.New(string(out))
		}
	})
	require.NoError(t, b.err, "build %s", b.pkg)
	return b.path
}

var foodsafeCommand = &builtCommand{pkg: "../cmd/foodsafe"}

// foodsafeBinary is cmd/foodsafe, as operators run it.
func foodsafeBinary(t testing.TB) string { return foodsafeCommand.binary(t) }

func removeCLI() {
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
}

type cliResult struct {
	Code           int
	Stdout, Stderr string
}

// cli runs the binary against the app's database.
func (a *app) cli(args ...string) cliResult {
	a.t.Helper()
	return a.cliIn("", args...)
}

// cliIn is cli with stdin as the command's standard input.
func (a *app) cliIn(stdin string, args ...string) cliResult {
	a.t.Helper()
	cmd := exec.Command(foodsafeBinary(a.t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+a.cfg.DatabaseURL, "FOODSAFE_BLOB_DIR="+a.cfg.BlobDir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(a.t, err)
	}
	return cliResult{Code: code, Stdout: out.String(), Stderr: errb.String()}
}

var fullKey = regexp.MustCompile(`^fsk_[a-z0-9]{16}\.[A-Za-z0-9_-]{43}\n$`)

func TestCLIKeyLifecycle(t *testing.T) {
	t.Parallel()
	a := newApp(t)

	r := a.cli("restaurants", "add", "r1", "--name", "Bistro One")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Empty(t, r.Stdout)
	require.Equal(t, 0, a.cli("restaurants", "add", "r1").Code, "idempotent")
	require.Equal(t, 0, a.cli("restaurants", "add", "r2").Code)

	// create: the key alone on stdout, everything else on stderr.
	r = a.cli("keys", "create", "--name", "Acme Accounting", "--grant", "r1=deliveries:read,areas:read", "--expires-in", "30d")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Regexp(t, fullKey, r.Stdout)
	key := strings.TrimSpace(r.Stdout)
	pub := publicID(t, key)
	require.Contains(t, r.Stderr, pub)
	require.NotContains(t, r.Stderr, secretOf(key))

	// use
	res := a.getAs(key, "/v1/restaurants")
	require.Equal(t, http.StatusOK, res.Status)
	require.JSONEq(t, `{"data":[{"restaurantId":"r1","scopes":["areas:read","deliveries:read"]}]}`, string(res.Body))

	// list, never a secret: grants counted, and listed when asked
	r = a.cli("keys", "list")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, pub)
	require.Contains(t, r.Stdout, "Acme Accounting")
	require.Regexp(t, `(?m)^`+pub+`\s+Acme Accounting\s+active\s+\S+\s+\S+\s+1\s+2\s+2\s*$`, r.Stdout)
	require.NotContains(t, r.Stdout, "r1=")
	require.NotContains(t, r.Stdout+r.Stderr, secretOf(key))
	r = a.cli("keys", "list", "--grants")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Regexp(t, `(?m)^# key `+pub+` "Acme Accounting": active, .*, 1 restaurants, 2 scopes, 2 grants\nr1=areas:read,deliveries:read\n`, r.Stdout)
	require.NotContains(t, r.Stdout+r.Stderr, secretOf(key))

	// grant, ungrant
	require.Equal(t, 0, a.cli("keys", "grant", pub, "--grant", "r2=fryer-checks:read").Code)
	require.Contains(t, string(a.getAs(key, "/v1/restaurants").Body), `{"restaurantId":"r2","scopes":["fryer-checks:read"]}`)
	require.Equal(t, 0, a.cli("keys", "ungrant", pub, "r1=areas:read").Code)
	require.Equal(t, 0, a.cli("keys", "ungrant", pub, "r2").Code)
	require.JSONEq(t, `{"data":[{"restaurantId":"r1","scopes":["deliveries:read"]}]}`, string(a.getAs(key, "/v1/restaurants").Body))

	r = a.cli("keys", "list", "--json")
	require.Equal(t, 0, r.Code, r.Stderr)
	var views []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &views))
	require.Len(t, views, 1)
	require.Equal(t, pub, views[0]["publicId"])
	require.Equal(t, "active", views[0]["state"])
	require.NotNil(t, views[0]["expiresAt"])
	require.Equal(t, 1.0, views[0]["restaurantCount"])
	require.Equal(t, 1.0, views[0]["scopeCount"], "deliveries:read, left after the ungrants")
	require.Equal(t, 1.0, views[0]["grantCount"])
	require.NotContains(t, views[0], "grants", "listed only with --grants")

	// revoke: refused from the next request on
	r = a.cli("keys", "revoke", pub)
	require.Equal(t, 0, r.Code, r.Stderr)
	requireProblem(t, a.getAs(key, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
	require.Contains(t, a.cli("keys", "list").Stdout, "revoked")
	// A grant on a revoked key could never be used: refused, nothing written.
	r = a.cli("keys", "grant", pub, "--grant", "r2=fryer-checks:read")
	require.Equal(t, 2, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, "revoked")
	r = a.cli("keys", "list", "--json", "--grants")
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &views))
	require.Equal(t, map[string]any{"r1": []any{"deliveries:read"}}, views[0]["grants"])
	require.Equal(t, "revoked", views[0]["state"])
	require.Equal(t, 1.0, views[0]["grantCount"])

	// audit shows the key's requests; the refused one is counted by shape
	require.NoError(t, a.svc.Audit.Close(t.Context()))
	r = a.cli("audit", "--key", pub)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "/v1/restaurants")
	require.NotContains(t, r.Stdout, secretOf(key))
	r = a.cli("audit", "--counts", "--key", pub)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Regexp(t, `(?m)^\S+\s+127\.0\.0\.1\s+GET\s+/v1/restaurants\s+401\s+revoked\s+`+pub+`\s+1\s*$`, r.Stdout)
}

// Bad input exits 2 with a message on stderr and writes nothing.
func TestCLIBadInput(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	require.Equal(t, 0, a.cli("restaurants", "add", "r1").Code)
	r := a.cli("keys", "create", "--name", "ok", "--grant", "r1=deliveries:read")
	require.Equal(t, 0, r.Code, r.Stderr)
	pub := publicID(t, strings.TrimSpace(r.Stdout))

	cases := map[string][]string{
		"unknown restaurant":         {"keys", "create", "--name", "x", "--grant", "r1=deliveries:read", "--grant", "nope=deliveries:read"},
		"unknown scope":              {"keys", "create", "--name", "x", "--grant", "r1=deliveries:read,deliveries:delete"},
		"scope of unknown coll.":     {"keys", "create", "--name", "x", "--grant", "r1=fridges:read"},
		"malformed grant":            {"keys", "create", "--name", "x", "--grant", "r1"},
		"empty scope list":           {"keys", "create", "--name", "x", "--grant", "r1="},
		"bad restaurant id":          {"keys", "create", "--name", "x", "--grant", "-r1=deliveries:read"},
		"no grant":                   {"keys", "create", "--name", "x"},
		"no name":                    {"keys", "create", "--grant", "r1=deliveries:read"},
		"bad expiry":                 {"keys", "create", "--name", "x", "--grant", "r1=deliveries:read", "--expires-in", "soon"},
		"negative expiry":            {"keys", "create", "--name", "x", "--grant", "r1=deliveries:read", "--expires-in", "-5m"},
		"unknown flag":               {"keys", "create", "--name", "x", "--grant", "r1=deliveries:read", "--admin"},
		"grant unknown restaurant":   {"keys", "grant", pub, "--grant", "nope=deliveries:read"},
		"grant unknown key":          {"keys", "grant", "zzzzzzzzzzzzzzzz", "--grant", "r1=deliveries:read"},
		"revoke unknown key":         {"keys", "revoke", "zzzzzzzzzzzzzzzz"},
		"revoke malformed id":        {"keys", "revoke", "fsk_whole.key"},
		"ungrant unknown scope":      {"keys", "ungrant", pub, "r1=deliveries:nope"},
		"restaurant bad id":          {"restaurants", "add", "has space"},
		"restaurant missing id":      {"restaurants", "add"},
		"unknown command":            {"keyz", "list"},
		"audit bad since":            {"audit", "--since", "yesterday"},
		"migrate with extra args":    {"migrate", "now"},
		"ungrant malformed restaur":  {"keys", "ungrant", pub, "=deliveries:read"},
		"ungrant unknown restaurant": {"keys", "ungrant", pub, "nope"},
		"ungrant scope not held":     {"keys", "ungrant", pub, "r1=areas:read"},
		"audit bad key":              {"audit", "--key", "BAD"},
		"audit bad restaurant":       {"audit", "--restaurant", "bad id!"},
		"audit counts by restaurant": {"audit", "--counts", "--restaurant", "r1"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			r := a.cli(args...)
			require.Equal(t, 2, r.Code, "stdout=%q stderr=%q", r.Stdout, r.Stderr)
			require.Empty(t, r.Stdout)
			require.NotEmpty(t, strings.TrimSpace(r.Stderr))
		})
	}
	// Nothing was written: still one key with its one grant.
	r = a.cli("keys", "list", "--json", "--grants")
	var views []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &views))
	require.Len(t, views, 1)
	require.Equal(t, map[string]any{"r1": []any{"deliveries:read"}}, views[0]["grants"])
}

// Grants from a file and from standard input, as many as a command line
// cannot hold: 2,100 restaurants x 25 scopes (two batches of inserts),
// one RESTAURANT=SCOPE,... per line, with comments and blank lines; and
// a file with a bad line, a missing or an empty one, refused with the
// line's number and nothing written.
func TestCLIGrantsFromFile(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	const n = 2100
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%04d", i+1)
	}
	_, err := a.store().Pool().Exec(context.Background(), `INSERT INTO restaurants (id) SELECT unnest($1::text[])`, ids)
	require.NoError(t, err)
	var reads []string
	for _, s := range catalog.Scopes() {
		if strings.HasSuffix(s, ":read") && s != catalog.DeliveryImagesRead {
			reads = append(reads, s)
		}
	}
	require.Len(t, reads, 25)
	var file strings.Builder
	file.WriteString("# partner Acme, every restaurant\n\n")
	for _, id := range ids {
		fmt.Fprintf(&file, "%s=%s\n", id, strings.Join(reads, ","))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "grants.txt")
	require.NoError(t, os.WriteFile(path, []byte(file.String()), 0o600))

	r := a.cli("keys", "create", "--name", "Acme", "--grants-file", path)
	require.Equal(t, 0, r.Code, r.Stderr)
	key := strings.TrimSpace(r.Stdout)
	require.Regexp(t, fullKey, r.Stdout)
	require.Contains(t, r.Stderr, "and 2097 more restaurants (2100 restaurants, 52500 scopes in all)")
	var list struct {
		Data []struct {
			RestaurantID string   `json:"restaurantId"`
			Scopes       []string `json:"scopes"`
		} `json:"data"`
	}
	res := a.getAs(key, "/v1/restaurants")
	require.Equal(t, http.StatusOK, res.Status)
	res.JSON(t, &list)
	require.Len(t, list.Data, n)
	for i, g := range list.Data {
		require.Equal(t, ids[i], g.RestaurantID)
		require.Equal(t, reads, g.Scopes)
	}

	// keys grant: standard input and a flag, both counted.
	r = a.cliIn("r0001=areas:write\n", "keys", "grant", publicID(t, key), "--grants-file", "-", "--grant", "r0002=users:write")
	require.Equal(t, 0, r.Code, r.Stderr)
	res = a.getAs(key, "/v1/restaurants")
	res.JSON(t, &list)
	require.Contains(t, list.Data[0].Scopes, "areas:write")
	require.Contains(t, list.Data[1].Scopes, "users:write")

	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	for name, c := range map[string]struct {
		args  []string
		stdin string
		says  string
	}{
		"a bad line":            {[]string{"keys", "create", "--name", "x", "--grants-file", write("bad.txt", "r0001=areas:read\n# fine\nr0002=areas:reed\n")}, "", "line 3"},
		"a bad line on stdin":   {[]string{"keys", "create", "--name", "x", "--grants-file", "-"}, "r0001=areas:read\nr0002\n", "standard input: line 2"},
		"an unknown restaurant": {[]string{"keys", "create", "--name", "x", "--grants-file", write("nope.txt", "r0001=areas:read\nnope=areas:read\n")}, "", "nope"},
		"no such file":          {[]string{"keys", "create", "--name", "x", "--grants-file", filepath.Join(dir, "missing.txt")}, "", "missing.txt"},
		"an empty file":         {[]string{"keys", "create", "--name", "x", "--grants-file", write("empty.txt", "# nothing\n\n")}, "", "holds no grant"},
		"grant with a bad line": {[]string{"keys", "grant", publicID(t, key), "--grants-file", "-"}, "r0001=areas:read,\n", "line 1"},
		"grant, unknown key":    {[]string{"keys", "grant", "zzzzzzzzzzzzzzzz", "--grants-file", path}, "", "no key"},
	} {
		t.Run(name, func(t *testing.T) {
			r := a.cliIn(c.stdin, c.args...)
			require.Equal(t, 2, r.Code, "stdout=%q stderr=%q", r.Stdout, r.Stderr)
			require.Empty(t, r.Stdout)
			require.Contains(t, r.Stderr, c.says)
		})
	}
	r = a.cli("keys", "list", "--json")
	require.Equal(t, 0, r.Code, r.Stderr)
	var views []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &views))
	require.Len(t, views, 1, "nothing written on bad input")
}

// `keys list` of a key of 20,000 restaurants x 25 scopes prints a line
// of counts, not the 500,000 grants (19.8 MB before); --grants lists
// them all, as text that reads back as a grants file and as JSON, read
// a page of 1,000 restaurants per statement, so the command holds a page,
// not the key (231 MB of RSS before).
func TestCLIKeysListOfALargeKey(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	const n = 20_000
	_, err := a.store().Pool().Exec(context.Background(),
		`INSERT INTO restaurants (id) SELECT 'r' || lpad(g::text, 5, '0') FROM generate_series(1, $1::int) g`, n)
	require.NoError(t, err)
	var reads []string
	for _, s := range catalog.Scopes() {
		if strings.HasSuffix(s, ":read") && s != catalog.DeliveryImagesRead {
			reads = append(reads, s)
		}
	}
	require.Len(t, reads, 25)
	r := a.cli("keys", "create", "--name", "Small", "--grant", "r00002=areas:read")
	require.Equal(t, 0, r.Code, r.Stderr)
	small := publicID(t, strings.TrimSpace(r.Stdout))
	r = a.cli("keys", "create", "--name", "Acme, every restaurant", "--grant", "r00001=areas:read")
	require.Equal(t, 0, r.Code, r.Stderr)
	large := publicID(t, strings.TrimSpace(r.Stdout))
	_, err = a.store().Pool().Exec(context.Background(), `
		INSERT INTO key_grants (key_id, restaurant_id, scope)
		SELECT k.id, r.id, s FROM api_keys k, restaurants r, unnest($2::text[]) s WHERE k.public_id = $1
		ON CONFLICT DO NOTHING`, large, reads)
	require.NoError(t, err)

	r = a.cli("keys", "list")
	require.Equal(t, 0, r.Code, r.Stderr)
	t.Logf("keys list: %d bytes", len(r.Stdout))
	require.LessOrEqual(t, len(r.Stdout), 200<<10)
	require.Regexp(t, `(?m)^`+small+`\s+Small\s+active\s+\S+\s+-\s+1\s+1\s+1\s*$`, r.Stdout)
	require.Regexp(t, `(?m)^`+large+`\s+Acme, every restaurant\s+active\s+\S+\s+-\s+20000\s+25\s+500000\s*$`, r.Stdout)

	r = a.cli("keys", "list", "--json")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.LessOrEqual(t, len(r.Stdout), 200<<10)
	var views []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &views))
	require.Len(t, views, 2)
	require.Equal(t, []any{large, 20000.0, 25.0, 500000.0},
		[]any{views[1]["publicId"], views[1]["restaurantCount"], views[1]["scopeCount"], views[1]["grantCount"]})

	r = a.cli("keys", "list", "--grants")
	require.Equal(t, 0, r.Code, r.Stderr)
	t.Logf("keys list --grants: %d bytes", len(r.Stdout))
	blocks := strings.Split(r.Stdout, "\n\n")
	require.Len(t, blocks, 2)
	require.Equal(t, "r00002=areas:read", blocks[0][strings.Index(blocks[0], "\n")+1:])
	require.Regexp(t, `^# key `+large+` "Acme, every restaurant": active, created \S+, expires -, 20000 restaurants, 25 scopes, 500000 grants\n`, blocks[1])
	grants, err := auth.ReadGrantSpecs(strings.NewReader(blocks[1]))
	require.NoError(t, err, "a key's lines are a grants file")
	require.Len(t, grants, n)
	sorted := slices.Sorted(slices.Values(reads))
	for i, g := range grants {
		require.Equal(t, fmt.Sprintf("r%05d", i+1), g.RestaurantID)
		require.Equal(t, sorted, g.Scopes)
	}

	r = a.cli("keys", "list", "--grants", "--json")
	require.Equal(t, 0, r.Code, r.Stderr)
	t.Logf("keys list --grants --json: %d bytes", len(r.Stdout))
	var full []struct {
		PublicID   string              `json:"publicId"`
		GrantCount int                 `json:"grantCount"`
		Grants     map[string][]string `json:"grants"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &full))
	require.Len(t, full, 2)
	require.Equal(t, map[string][]string{"r00002": {"areas:read"}}, full[0].Grants)
	require.Equal(t, large, full[1].PublicID)
	require.Len(t, full[1].Grants, n)
	require.Equal(t, sorted, full[1].Grants["r19999"])

	// What the command holds: the grants come a page at a time.
	st, rec := recordingStore(t, a.cfg.DatabaseURL)
	keys, err := st.KeyList(context.Background())
	require.NoError(t, err)
	rec.take()
	listed := 0
	require.NoError(t, st.KeyGrantsEach(context.Background(), keys[1], func(auth.Grant) error { listed++; return nil }))
	require.Equal(t, n, listed)
	require.Len(t, rec.take(), n/1000+1, "a statement per 1,000 restaurants, and the one that finds no more")
}

// `restaurants add --enabled-since` records when capture really started
// (events before it are refused); `restaurants list` shows it to operators;
// a second `add` says what it changed.
func TestCLIRestaurants(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	r := a.cli("restaurants", "add", "r1", "--name", "Bistro One", "--enabled-since", "2026-01-31T08:00:00Z")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, "enabled since 2026-01-31T08:00:00Z")
	r = a.cli("restaurants", "add", "r2", "--enabled-since", "1769846400000")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, "enabled since 2026-01-31T08:00:00Z")

	r = a.cli("restaurants", "add", "r1")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, "already enabled")
	r = a.cli("restaurants", "add", "r1", "--name", "Bistro 1")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, `renamed from "Bistro One" to "Bistro 1"`)

	r = a.cli("restaurants", "list")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Regexp(t, `r1\s+Bistro 1\s+2026-01-31T08:00:00Z`, r.Stdout)
	require.Regexp(t, `r2\s+-\s+2026-01-31T08:00:00Z`, r.Stdout)
	r = a.cli("restaurants", "list", "--json")
	require.Equal(t, 0, r.Code, r.Stderr)
	var list []struct {
		ID, EnabledAt, EnabledAtMillis string
		Name                           *string
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &list))
	require.Len(t, list, 2)
	require.Equal(t, "1769846400000", list[0].EnabledAtMillis)

	for name, args := range map[string][]string{
		"bad time":  {"restaurants", "add", "r3", "--enabled-since", "yesterday"},
		"bad id":    {"restaurants", "add", "bad id!"},
		"list args": {"restaurants", "list", "x"},
	} {
		t.Run(name, func(t *testing.T) {
			r := a.cli(args...)
			require.Equal(t, 2, r.Code, r.Stderr)
		})
	}
	r = a.cli("restaurants", "list")
	require.NotContains(t, r.Stdout, "r3", "nothing written on bad input")
}
