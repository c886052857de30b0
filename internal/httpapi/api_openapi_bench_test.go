package httpapi

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/foodsafe/foodsafe/internal/openapi"
	"github.com/foodsafe/foodsafe/internal/validate"
)

// BenchmarkOpenAPIDocument measures what serve does once at start-up for
// GET /v1/openapi.json: build the document from the route table and the
// schemas (kin-openapi validates it) and write it as JSON. It reports the
// document's size as served, whole and gzip-compressed (what the docs
// page downloads): docs/performance.md, "The OpenAPI document".
func BenchmarkOpenAPIDocument(b *testing.B) {
	set, err := validate.Load()
	if err != nil {
		b.Fatal(err)
	}
	var raw []byte
	for b.Loop() {
		doc, err := Document(set, openapi.Info{Version: "bench", Server: "/"})
		if err != nil {
			b.Fatal(err)
		}
		if raw, err = marshalDocument(doc); err != nil {
			b.Fatal(err)
		}
	}
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	_, _ = w.Write(raw)
	_ = w.Close()
	b.ReportMetric(float64(len(raw)), "doc-bytes")
	b.ReportMetric(float64(z.Len()), "gzip-bytes")
}
