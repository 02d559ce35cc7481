package memory

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/config"
)

// Turns through the proxy (which ingest in the background), direct
// retrieval, manual add/edit/forget and HTTP searches, all at once (run with
// -race). Afterwards the index agrees with the units and nothing is pending.
func TestConcurrentUse(t *testing.T) {
	h := startHost(t, testCfg(t, func(m *config.Memory) { m.IngestEveryTurns = 2 }), AssembleOptions{}, "")
	ctx := context.Background()
	s := h.mem.Store
	prefs := []string{"I prefer tabs for indentation.", "Actually I prefer spaces for indentation.", "Never deploy on Fridays.",
		"We use PostgreSQL for the main database.", "We switched to MySQL.", "My timezone is UTC+8.", "请叫我小王。", "我们用飞书沟通。"}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 8; i++ {
				o := chatOpts{session: fmt.Sprintf("c%d-%d", w, i/4), user: fmt.Sprintf("u%d", w%2), done: i%4 == 3}
				h.chat(prefs[(w+i)%len(prefs)], o)
			}
		}()
	}
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				if _, err := s.Retrieve(ctx, Query{Scope: fmt.Sprintf("user:u%d", i%2), Agent: "default", Texts: []string{"indentation database deploy"}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 15; i++ {
			u, _, err := s.Add(ctx, NewUnit{Content: fmt.Sprintf("Remember that worker %d listens on port %d.", i, 7000+i), Scope: "user:u0"})
			if err != nil {
				errs <- err
				return
			}
			switch i % 3 {
			case 0:
				c := fmt.Sprintf("Remember that worker %d listens on port %d.", i, 8000+i)
				if _, err := s.Edit(ctx, u.ID, Patch{Content: &c}); err != nil {
					errs <- err
					return
				}
			case 1:
				if err := s.Forget(ctx, u.ID, "test"); err != nil {
					errs <- err
					return
				}
			}
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			var out struct {
				Results []SearchResult `json:"results"`
			}
			if code := h.api(http.MethodGet, "/v1/memory/search?q=worker+port&scope=user:u0", nil, &out); code != 200 {
				errs <- fmt.Errorf("search: HTTP %d", code)
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// End the sessions that are still open, then everything settles.
	for w := 0; w < 4; w++ {
		for k := 0; k < 2; k++ {
			h.Core.EndSession(ctx, fmt.Sprintf("c%d-%d", w, k), "test")
		}
	}
	h.settle()
	checkIndex(t, s)
	for _, scope := range []string{"user:u0", "user:u1"} {
		r, err := s.Retrieve(ctx, Query{Scope: scope, Agent: "default", Texts: []string{"indentation database"}})
		if err != nil {
			t.Fatal(err)
		}
		// Contradictions resolved per scope: never both values of a slot.
		if strings.Contains(r.Section.Body, "tabs") && strings.Contains(r.Section.Body, "spaces") {
			t.Fatalf("%s: both indentation preferences injected:\n%s", scope, r.Section.Body)
		}
	}
}
