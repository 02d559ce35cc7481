package proxy_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/route"
)

// TestUnknownPathListsEveryRoute: GET / (or any unknown path) answers 404
// with every route the host serves, the dashboard and the extra routes
// (skills, memory) included.
func TestUnknownPathListsEveryRoute(t *testing.T) {
	noop := func(http.ResponseWriter, *http.Request) {}
	h := newHarness(t, apiformat.OpenAI, func(o *proxy.Options) {
		o.Routes = []route.Route{{Pattern: "GET /v1/skills", Handler: noop}, {Pattern: "POST /v1/memory/search", Handler: noop}}
		o.PublicRoutes = []route.Route{{Pattern: "GET /ui/", Handler: noop}}
	})
	for _, path := range []string{"/", "/nope"} {
		resp, err := http.Get(h.proxy.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		for _, want := range []string{"POST /v1/chat/completions", "POST /v1/messages", "GET /v1/skills", "POST /v1/memory/search", "GET /ui/", "GET /healthz", "/a/<agent-id>/"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s: the route list lacks %q: %s", path, want, b)
			}
		}
	}
}
