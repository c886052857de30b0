package blob

import (
	"strings"
	"testing"
)

func TestParseS3URL(t *testing.T) {
	got, err := ParseS3URL("s3://files/prod/eu?endpoint=https://s3.example.com:9000&region=eu-west-3&path_style=true")
	if err != nil {
		t.Fatal(err)
	}
	want := S3Location{Bucket: "files", Prefix: "prod/eu/", Endpoint: "https://s3.example.com:9000", Region: "eu-west-3", PathStyle: true}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got, err := ParseS3URL("s3://files"); err != nil || got != (S3Location{Bucket: "files"}) {
		t.Fatalf("bare bucket: %+v, %v", got, err)
	}

	for raw, msg := range map[string]string{
		"gs://files":                             `unknown scheme "gs"`,
		"/var/lib/files":                         `unknown scheme ""`,
		"s3://key:secret@files":                  "must not carry credentials",
		"s3:///prefix":                           "names no bucket",
		"s3://files?endpoint=ftp://x":            "must be an http:// or https:// URL",
		"s3://files?endpoint=http://u:p@x":       "must be an http:// or https:// URL without credentials",
		"s3://files?endpoint=":                   "must be an http:// or https:// URL",
		"s3://files?path_style=yes":              "path_style must be true or false",
		"s3://files?region=a&region=b":           `"region" must appear once`,
		"s3://files?secret_access_key=whatever":  `unknown query parameter "secret_access_key"`,
		"s3://files/%zz":                         "not a URL",
		"s3://files?endpoint=http://x&regoin=eu": `unknown query parameter "regoin"`,
	} {
		_, err := ParseS3URL(raw)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: got %v, want an error containing %q", raw, err, msg)
		}
		if err != nil && (strings.Contains(err.Error(), "secret") && !strings.Contains(raw, "secret_access_key") || strings.Contains(err.Error(), "u:p")) {
			t.Errorf("%s: error repeats a credential: %v", raw, err)
		}
	}
}

func TestDescribeNeverLogsSecrets(t *testing.T) {
	for raw, want := range map[string]string{
		"": "directory /data/blobs",
		"s3://files/prod?endpoint=http://127.0.0.1:7070&path_style=true": "s3://files/prod at http://127.0.0.1:7070",
		"s3://AKID:topsecret@files/prod":                                 "s3://files/prod",
		"s3://files?endpoint=http://AKID:topsecret@host:1":               "s3://files at http://host:1",
		"s3://files?secret=topsecret":                                    "s3://files",
	} {
		got := Describe(Settings{URL: raw, Dir: "/data/blobs"})
		if got != want || strings.Contains(got, "topsecret") {
			t.Errorf("Describe(%q) = %q, want %q", raw, got, want)
		}
	}
}
