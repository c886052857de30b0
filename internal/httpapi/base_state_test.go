package httpapi

import (
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
)

// A value is read back under its own key only: not under a key of the same
// name and another type, nor under gin's string key of that name.
func TestStateKeyTyped(t *testing.T) {
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	words := stateKey[string]{"k"}
	flags := stateKey[bool]{"k"}
	if _, ok := words.get(c); ok {
		t.Fatal("a key never set reads as set")
	}
	words.set(c, "v")
	if got, ok := words.get(c); !ok || got != "v" {
		t.Fatalf("get = %q, %v; want v, true", got, ok)
	}
	if _, ok := flags.get(c); ok {
		t.Fatal("a key of another type but the same name reads the value")
	}
	if _, ok := c.Get("k"); ok {
		t.Fatal("gin's string key of the same name reads the value")
	}
	c.Set("k", "string key")
	if got := words.value(c); got != "v" {
		t.Fatalf("value = %q after gin's string key was set; want v", got)
	}
}

func TestPrincipalOutsideAuthenticatePanics(t *testing.T) {
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	defer func() {
		if recover() == nil {
			t.Fatal("principal on a request without authenticate returned")
		}
	}()
	principal(c)
}
