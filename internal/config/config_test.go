package config

import (
	"testing"
	"time"

	"github.com/caarlos0/env/v11"
)

func TestDays(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"400d": 400 * 24 * time.Hour, "0d": 0, "0": 0, "36h": 36 * time.Hour, "90m": 90 * time.Minute,
	} {
		var d Days
		if err := d.UnmarshalText([]byte(in)); err != nil || time.Duration(d) != want {
			t.Errorf("%q: got %v, %v; want %v", in, time.Duration(d), err, want)
		}
	}
	for _, in := range []string{"", "d", "-1d", "1.5d", "1w", "400 d", "99999999d"} {
		var d Days
		if err := d.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("%q: accepted as %v", in, time.Duration(d))
		}
	}
	if s := Days(400 * 24 * time.Hour).String(); s != "400d" {
		t.Errorf("String: %s", s)
	}
	if s := Days(25 * time.Hour).String(); s != "25h0m0s" {
		t.Errorf("String: %s", s)
	}
}

// Settings that would let compaction take a version a live walk still
// reads are refused at start-up.
func TestLoadRefusesUnsafeRetention(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"window not longer than the cursor TTL": {"FOODSAFE_COMPACT_AFTER": "24h"},
		"window shorter than a longer TTL":      {"FOODSAFE_CURSOR_TTL": "48h", "FOODSAFE_COMPACT_AFTER": "30h"},
		"cursors that never expire":             {"FOODSAFE_CURSOR_TTL": "0s"},
		"negative retention":                    {"FOODSAFE_AUDIT_RETENTION": "-1h"},
		"negative interval":                     {"FOODSAFE_MAINTENANCE_INTERVAL": "-1m"},
		"grace shorter than an upload":          {"FOODSAFE_BLOB_GRACE": "5m"},
	} {
		t.Run(name, func(t *testing.T) {
			for k, v := range env {
				t.Setenv(k, v)
			}
			if _, err := Load(); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	for name, env := range map[string]map[string]string{
		"defaults":            {},
		"compaction off":      {"FOODSAFE_COMPACT_AFTER": "0"},
		"longer TTL, window":  {"FOODSAFE_CURSOR_TTL": "48h", "FOODSAFE_COMPACT_AFTER": "3d"},
		"audit kept forever":  {"FOODSAFE_AUDIT_RETENTION": "0"},
		"maintenance by cron": {"FOODSAFE_MAINTENANCE_INTERVAL": "0"},
		"blobs kept forever":  {"FOODSAFE_BLOB_GRACE": "0"},
	} {
		t.Run(name, func(t *testing.T) {
			for k, v := range env {
				t.Setenv(k, v)
			}
			if _, err := Load(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Variables lists exactly the variables env.Parse reads from Config
// (a nested struct or a prefix would change them), each with a meaning
// (a desc tag): the configuration reference is made from it.
func TestVariablesCoverConfig(t *testing.T) {
	params, err := env.GetFieldParams(&Config{})
	if err != nil {
		t.Fatal(err)
	}
	vars, err := Variables()
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]Variable{}
	for _, v := range vars {
		listed[v.Name] = v
		if v.Meaning == "" || v.Type == "" {
			t.Errorf("%s: no meaning or type (a desc tag on its Config field)", v.Name)
		}
	}
	for _, p := range params {
		v, ok := listed[p.Key]
		switch {
		case !ok:
			t.Errorf("%s is read but not listed", p.Key)
		case v.ReadBy != "foodsafe":
			t.Errorf("%s is read by %q", p.Key, v.ReadBy)
		case p.HasDefaultValue && v.Default != p.DefaultValue:
			t.Errorf("%s: default %q, listed %q", p.Key, p.DefaultValue, v.Default)
		}
	}
	if n := len(vars) - len(Elsewhere); n != len(params) {
		t.Errorf("%d variables from Config, env reads %d", n, len(params))
	}
	if v := listed["FOODSAFE_METRICS_ADDR"]; v.Default != DefaultMetricsAddr {
		t.Errorf("FOODSAFE_METRICS_ADDR's default is listed as %q", v.Default)
	}
}

// FOODSAFE_TRUSTED_PROXIES takes CIDRs and bare addresses, and refuses
// anything else at start-up.
func TestTrustedProxies(t *testing.T) {
	c, err := LoadFrom(map[string]string{"FOODSAFE_TRUSTED_PROXIES": " 10.1.2.3/8, 192.0.2.7 ,2001:db8::/32,"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.TrustedProxies.String(); got != "10.0.0.0/8,192.0.2.7/32,2001:db8::/32" {
		t.Errorf("got %s", got)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "10.0.0.0/8;rm"} {
		if _, err := LoadFrom(map[string]string{"FOODSAFE_TRUSTED_PROXIES": bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if c, err := LoadFrom(map[string]string{}); err != nil || len(c.TrustedProxies) != 0 {
		t.Errorf("unset: %v, %v", c.TrustedProxies, err)
	}
}

// The defaults are sized for a server facing the internet: a client has a
// few seconds to send its request line and headers (slow-loris), and a
// connection left idle after a request is closed within half a minute
// rather than two.
func TestConnectionDefaults(t *testing.T) {
	c, err := LoadFrom(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if c.ReadHeaderTimeout > 5*time.Second || c.IdleTimeout > 30*time.Second || c.MaxConnections < 1 {
		t.Errorf("header timeout %s, idle timeout %s, connections %d", c.ReadHeaderTimeout, c.IdleTimeout, c.MaxConnections)
	}
}

// A client is an IPv4 address and an IPv6 /64 unless set otherwise; lengths
// no client has, a connection share that is no percent and a row bound
// without room for a named row are refused at start-up.
func TestClientSettings(t *testing.T) {
	c, err := LoadFrom(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if p := c.ClientPrefixes(); p.IPv4 != 32 || p.IPv6 != 64 || c.ClientConnectionShare < 1 || c.ClientConnectionShare > 100 {
		t.Errorf("prefixes %+v, share %d", p, c.ClientConnectionShare)
	}
	for _, env := range []map[string]string{
		{"FOODSAFE_CLIENT_PREFIX_IPV4": "7"}, {"FOODSAFE_CLIENT_PREFIX_IPV4": "33"},
		{"FOODSAFE_CLIENT_PREFIX_IPV6": "15"}, {"FOODSAFE_CLIENT_PREFIX_IPV6": "129"},
		{"FOODSAFE_CLIENT_CONNECTION_SHARE": "0"}, {"FOODSAFE_CLIENT_CONNECTION_SHARE": "101"},
		{"FOODSAFE_AUDIT_COUNT_ROWS": "1"},
	} {
		if _, err := LoadFrom(env); err == nil {
			t.Errorf("%v accepted", env)
		}
	}
	if _, err := LoadFrom(map[string]string{"FOODSAFE_CLIENT_PREFIX_IPV4": "24", "FOODSAFE_CLIENT_PREFIX_IPV6": "48",
		"FOODSAFE_CLIENT_CONNECTION_SHARE": "100", "FOODSAFE_AUDIT_COUNT_ROWS": "2"}); err != nil {
		t.Error(err)
	}
}

// The upload settings refuse what would cut every upload or make no
// sense: a reserve that is no percent below 100, negative rates, grace or
// quota, and a minimum rate without a grace. 0 turns the rate, the
// reserve and the quota off.
func TestUploadSettings(t *testing.T) {
	c, err := LoadFrom(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if c.UploadMinRate != 1024 || c.UploadRateGrace != 20*time.Second || c.UploadsReserved != 25 || c.UploadQuotaBytes != 2<<30 {
		t.Errorf("rate %d, grace %s, reserved %d, quota %d", c.UploadMinRate, c.UploadRateGrace, c.UploadsReserved, c.UploadQuotaBytes)
	}
	for _, env := range []map[string]string{
		{"FOODSAFE_UPLOADS_RESERVED": "-1"}, {"FOODSAFE_UPLOADS_RESERVED": "100"},
		{"FOODSAFE_UPLOAD_MIN_RATE": "-1"}, {"FOODSAFE_UPLOAD_RATE_GRACE": "-1s"}, {"FOODSAFE_UPLOAD_QUOTA_BYTES": "-1"},
		{"FOODSAFE_UPLOAD_RATE_GRACE": "0"},
	} {
		if _, err := LoadFrom(env); err == nil {
			t.Errorf("%v accepted", env)
		}
	}
	if _, err := LoadFrom(map[string]string{"FOODSAFE_UPLOAD_MIN_RATE": "0", "FOODSAFE_UPLOAD_RATE_GRACE": "0",
		"FOODSAFE_UPLOADS_RESERVED": "0", "FOODSAFE_UPLOAD_QUOTA_BYTES": "0"}); err != nil {
		t.Error(err)
	}
}
