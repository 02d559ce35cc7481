package skills

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/skills/bank"
)

// fakeEmbeddings is an OpenAI-compatible /embeddings endpoint whose vectors
// are hashed bags of words with a few synonyms folded together, so that
// "RAM" lands near "memory" the way a real embedding model would.
func fakeEmbeddings(t *testing.T, calls *atomic.Int64) *httptest.Server {
	synonyms := map[string]string{"ram": "memory", "swap": "memory", "swaps": "memory", "oom": "memory", "heap": "memory"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/embeddings" {
			http.Error(w, "bad request", 400)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data  []item         `json:"data"`
			Usage map[string]int `json:"usage"`
		}
		for i, text := range req.Input {
			v := make([]float32, 256)
			for _, term := range QueryTerms([]string{text}, 400) {
				if s, ok := synonyms[term]; ok {
					term = s
				}
				h := fnv.New32a()
				h.Write([]byte(stem(term)))
				v[h.Sum32()%256]++
			}
			out.Data = append(out.Data, item{Index: i, Embedding: v})
		}
		out.Usage = map[string]int{"prompt_tokens": 7 * len(req.Input)}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestEmbeddingAndHybridRetrieval(t *testing.T) {
	var calls atomic.Int64
	srv := fakeEmbeddings(t, &calls)
	dir := t.TempDir()
	st := openStore(t, dir)
	emb := &embed.HTTP{Base: srv.URL + "/v1", Model: "fake-embed", Purpose: "embedder", Usage: st}
	lib, err := Open(context.Background(), Options{Dir: filepath.Join(dir, "skills"), Store: st, Log: zerolog.Nop(), Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	if _, err := InstallBank(context.Background(), lib, bank.FS()); err != nil {
		t.Fatal(err)
	}
	if err := lib.EmbedWait(context.Background()); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := st.Reader().QueryRow(`SELECT COUNT(*) FROM skill_vectors WHERE model = ?`, emb.Name()).Scan(&n); err != nil || n != len(bank.Names()) {
		t.Fatalf("%d vectors stored (%v), want %d", n, err, len(bank.Names()))
	}
	query := []string{"my celery workers keep using more and more RAM until the box swaps"}
	kw, _ := NewProvider(lib, ProviderOptions{TopK: 6}).Select(context.Background(), core.Query{UserTexts: query})
	for _, h := range kw {
		if h.Skill.Name == "memory-leak-hunting" {
			t.Fatal("keyword retrieval was expected to miss this one (it is a holdout miss)")
		}
	}
	for _, mode := range []string{ModeEmbedding, ModeHybrid} {
		p := NewProvider(lib, ProviderOptions{TopK: 6, MaxTokens: 1500, Mode: mode, Embedder: emb})
		hits, err := p.Select(context.Background(), core.Query{UserTexts: query})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, h := range hits {
			names = append(names, h.Skill.Name)
		}
		// Keywords alone miss it ("RAM", "swaps"); the vectors find it.
		if mode == ModeEmbedding && names[0] != "memory-leak-hunting" || !slices.Contains(names, "memory-leak-hunting") {
			t.Fatalf("%s: hits %v", mode, names)
		}
	}
	// The query embedding is cached: asking again makes no call.
	before := calls.Load()
	p := NewProvider(lib, ProviderOptions{TopK: 6, Mode: ModeHybrid, Embedder: emb})
	p.Select(context.Background(), core.Query{UserTexts: query})
	p.Select(context.Background(), core.Query{UserTexts: query})
	if got := calls.Load() - before; got != 1 {
		t.Fatalf("%d embedding calls for the same query twice, want 1", got)
	}
	// Usage of the embedding calls is recorded.
	usage, err := st.UsageByPurpose(context.Background())
	if err != nil || usage["embedder"].Calls == 0 {
		t.Fatalf("embedder usage = %+v %v", usage, err)
	}
	// The endpoint going away falls back to keywords (the turn still gets skills).
	srv.Close()
	p = NewProvider(lib, ProviderOptions{TopK: 6, Mode: ModeHybrid, Embedder: emb})
	sec, err := p.Context(context.Background(), core.Query{UserTexts: []string{"my flaky test fails randomly"}})
	if err != nil || len(sec.IDs) == 0 || sec.IDs[0] != "skill:flaky-test-triage@1" {
		t.Fatalf("fallback to keywords: %v %v", sec.IDs, err)
	}
	// Vectors survive a restart (no re-embedding of unchanged skills).
	lib2, err := Open(context.Background(), Options{Dir: filepath.Join(dir, "skills"), Store: st, Log: zerolog.Nop(), Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	defer lib2.Close()
	withVec := 0
	for _, e := range lib2.snap.Load().sorted {
		if e.vec != nil {
			withVec++
		}
	}
	if withVec != len(bank.Names()) {
		t.Fatalf("%d skills have vectors after reopening, want all", withVec)
	}
}
