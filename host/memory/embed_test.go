package memory

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/internal/testwait"
)

// conceptVector is a toy embedding: synonyms share a dimension, other words hash.
func conceptVector(text string) []float32 {
	concepts := map[string]int{"car": 0, "automobile": 0, "vehicle": 0, "dog": 1, "puppy": 1, "canine": 1}
	v := make([]float32, 64)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return r < 'a' || r > 'z' }) {
		if d, ok := concepts[w]; ok {
			v[d] += 3
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[2+int(h.Sum32()%62)] += 0.3
	}
	return embed.Normalize(v)
}

func TestEmbeddingsFindWhatWordsMiss(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data  []item         `json:"data"`
			Usage map[string]int `json:"usage"`
		}
		for i, s := range req.Input {
			out.Data = append(out.Data, item{i, conceptVector(s)})
		}
		out.Usage = map[string]int{"prompt_tokens": 7}
		json.NewEncoder(w).Encode(out)
	}))
	defer srv.Close()
	cfg := testCfg(t, func(m *config.Memory) { m.UseEmbeddings = true })
	cfg.LLM.APIBase = srv.URL
	h := startHost(t, cfg, AssembleOptions{}, "")
	if h.mem.Store.o.Embedder == nil || h.mem.Store.o.Mode != "hybrid" {
		t.Fatalf("embedder not set up: %+v", h.mem.Store.o)
	}
	ctx := context.Background()
	if _, _, err := h.mem.Store.Add(ctx, NewUnit{Content: "Remember that the automobile is parked in garage B.", Scope: "user:u"}); err != nil {
		t.Fatal(err)
	}
	h.mem.Store.Add(ctx, NewUnit{Content: "The quarterly report is due on the fifth.", Scope: "user:u"})
	block := memoryBlock(h.chat("Where did I leave my car?", chatOpts{session: "e", user: "u"}))
	if !strings.Contains(block, "garage B") || strings.Contains(block, "quarterly") {
		t.Fatalf("block:\n%s", block)
	}
	// The embedder's usage is recorded off the request path (asyncusage),
	// soon after.
	testwait.For(t, "the embedder's usage recorded", func() bool {
		usage, _ := h.Store.UsageByPurpose(ctx)
		return usage["embedder"].Calls >= 3
	})
	if calls < 3 {
		t.Fatalf("%d embedder calls", calls)
	}
	// Without embeddings the same question finds nothing (no shared word).
	plain, _ := openStore(t, Options{})
	plain.Add(ctx, NewUnit{Content: "Remember that the automobile is parked in garage B.", Scope: "user:u"})
	if r, _ := plain.Retrieve(ctx, Query{Scope: "user:u", Agent: "a", Texts: []string{"Where did I leave my car?"}}); strings.Contains(r.Section.Body, "garage") {
		t.Fatal("keyword retrieval should not see it")
	}
	// The embedder failing does not fail retrieval.
	srv.Close()
	if r, err := h.mem.Store.Retrieve(ctx, Query{Scope: "user:u", Agent: "a", Texts: []string{"garage"}}); err != nil || !strings.Contains(r.Section.Body, "garage B") {
		t.Fatalf("retrieval without the embedder: %v\n%s", err, r.Section.Body)
	}
}
