package memory

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// wordEmbedder embeds a text as its words hashed into 32 dimensions,
// normalised: texts sharing words are near, deterministically.
type wordEmbedder struct{}

func (wordEmbedder) Name() string { return "words" }

func (wordEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 32)
		for _, w := range Terms(t) {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%32]++
		}
		var n float64
		for _, x := range v {
			n += float64(x * x)
		}
		for j := range v {
			if n > 0 {
				v[j] /= float32(math.Sqrt(n))
			}
		}
		out[i] = v
	}
	return out, nil
}

// With embeddings, the index (which hands the nearest units over by their
// derived data, without decoding them) ranks exactly as SQLite, hits
// included.
func TestIndexMatchesSQLWithEmbeddings(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := Open(st, Options{Now: func() time.Time { return t0 }, Embedder: wordEmbedder{}, Mode: "hybrid"})
	c := newCorpus(41)
	types := []Type{Preference, Semantic, ProjectState, Episodic}
	for i := 0; i < 150; i++ {
		if _, _, err := s.Add(ctx, NewUnit{Content: "The team " + c.phrase(3) + " for the " + c.phrase(4) + ".", Type: types[i%len(types)], Scope: "user:a"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.StartIndex(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.StopIndex()
	similar := 0
	for i := 0; i < 60; i++ {
		q := Query{Scope: "user:a", Agent: "default", Texts: []string{"What about the " + c.phrase(3) + "?"}}
		got, err := s.Retrieve(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		src, err := s.sqlSourceNow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.retrieveFrom(ctx, src, q, s.o.TopK, s.o.StandingK, s.o.MaxTokens, false)
		if err != nil {
			t.Fatal(err)
		}
		show := func(r Result) string {
			var b strings.Builder
			for _, h := range r.Hits {
				fmt.Fprintf(&b, "%s %s %v %v %s | %s\n", h.ID, h.Content, h.Score, h.Matched, h.Reason, h.SaidAt.UTC())
				if strings.Contains(h.Reason, "similar") {
					similar++
				}
			}
			return b.String() + r.Section.Body
		}
		if g, w := show(got), show(want); g != w {
			t.Fatalf("query %q:\nindex:\n%s\nsqlite:\n%s", q.Texts[0], g, w)
		}
	}
	if similar == 0 {
		t.Fatal("no hit came by its embedding: the test checks nothing of that path")
	}
}
