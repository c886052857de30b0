package server

import "testing"

// What following a request's framing costs a connection's reads: a GET
// of the size partners send, and a PUT with a 1 KiB body.
func BenchmarkFraming(b *testing.B) {
	get := []byte("GET /v1/restaurants/demo-bistro/collections/temperature-records/records?limit=100 HTTP/1.1\r\n" +
		"Host: api.foodsafe.example\r\nAuthorization: Bearer fsk_aaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n" +
		"User-Agent: foodsafe-sync/1.0\r\nAccept-Encoding: gzip\r\n\r\n")
	put := append([]byte("PUT /v1/ingest/restaurants/r1/collections/areas/records/a1/mutations/m1 HTTP/1.1\r\nHost: x\r\n"+
		"Content-Type: application/json\r\nContent-Length: 1024\r\n\r\n"), make([]byte, 1024)...)
	for name, req := range map[string][]byte{"get": get, "put": put} {
		b.Run(name, func(b *testing.B) {
			var f framing
			b.SetBytes(int64(len(req)))
			for b.Loop() {
				f.feed(req)
				f.next()
			}
		})
	}
}
