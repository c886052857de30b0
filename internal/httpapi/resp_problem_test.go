package httpapi

import (
	"net/http"
	"net/url"
	"testing"
)

// A problem's instance is the path as the client sent it (a URI
// reference), never the decoded path, which names another resource or is
// not a URI at all; a pasted credential loses its secret however it was
// encoded.
func TestInstancePath(t *testing.T) {
	t.Parallel()
	for requestURI, want := range map[string]string{
		"/v1/restaurants/demo-bistro/deliveries?from=1&to=2": "/v1/restaurants/demo-bistro/deliveries",
		"/v1/restaurants/a%20b/deliveries":                   "/v1/restaurants/a%20b/deliveries",
		"/v1/restaurants/demo%2Fbistro/deliveries":           "/v1/restaurants/demo%2Fbistro/deliveries",
		"/v1/restaurants/%64emo/deliveries":                  "/v1/restaurants/%64emo/deliveries",
		"/caf%C3%A9":                                         "/caf%C3%A9",
		"/a\"b<c>{d}|e^`f\\":                                 "/a%22b%3Cc%3E%7Bd%7D%7Ce%5E%60f%5C",
		"/caf\xc3\xa9":                                       "/caf%C3%A9",
		"/x#frag":                                            "/x%23frag",
		"/v1/restaurants/fsk_abcdefghijklmnop.topsecret/x":   "/v1/restaurants/fsk_abcdefghijklmnop.[redacted]/x",
		"/v1/restaurants/fsk_abcdefghijklmnop%2Etopsecret/x": "/v1/restaurants/fsk_abcdefghijklmnop%2E[redacted]/x",
		"/v1/restaurants/%66sk_abcdefghijklmnop.topsecret/x": "/v1/restaurants/%66sk_abcdefghijklmnop.[redacted]/x",
		"http://api.example/v1/restaurants/a%20b?x=1":        "/v1/restaurants/a%20b",
		"*": "*",
	} {
		u, err := url.ParseRequestURI(requestURI)
		if requestURI == "*" {
			u, err = &url.URL{Path: "*"}, nil
		}
		if err != nil {
			t.Fatalf("%q: %v", requestURI, err)
		}
		got := instancePath(&http.Request{RequestURI: requestURI, URL: u})
		if got != want {
			t.Errorf("instance of %q = %q, want %q", requestURI, got, want)
		}
		if _, err := url.Parse(got); err != nil {
			t.Errorf("instance %q of %q is no URI reference: %v", got, requestURI, err)
		}
	}
}
