package skills

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/skills/bank"
	"github.com/metaclaw-go/metaclaw/host/tokens"
	"github.com/metaclaw-go/metaclaw/internal/heapstat"
)

// syntheticLibrary writes n skills derived from the bank (each a bank skill
// with lines mixed in from two others, so vocabulary overlaps like a real
// library's) and opens a library on them.
func syntheticLibrary(tb testing.TB, n int) *Library {
	tb.Helper()
	dir, skillsDir := writeSyntheticLibrary(tb, n)
	st := openStore(tb, dir)
	lib, err := Open(context.Background(), Options{Dir: skillsDir, Store: st, Log: zerolog.Nop()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { lib.Close() })
	if got := len(lib.List()); got != n {
		tb.Fatalf("loaded %d skills, want %d", got, n)
	}
	return lib
}

// writeSyntheticLibrary writes the files of syntheticLibrary and returns
// the state folder and the skill folder in it.
func writeSyntheticLibrary(tb testing.TB, n int) (dir, skillsDir string) {
	tb.Helper()
	var base []*Skill
	for _, name := range bank.Names() {
		raw, err := fs.ReadFile(bank.FS(), name+"/"+FileName)
		if err != nil {
			tb.Fatal(err)
		}
		s, err := Parse(raw)
		if err != nil {
			tb.Fatal(err)
		}
		base = append(base, s)
	}
	dir = tb.TempDir()
	skillsDir = filepath.Join(dir, "skills")
	r := rand.New(rand.NewSource(42))
	for i := 0; i < n; i++ {
		b := base[i%len(base)]
		o1, o2 := base[r.Intn(len(base))], base[r.Intn(len(base))]
		lines := strings.Split(b.Body, "\n")
		for _, o := range []*Skill{o1, o2} {
			ol := strings.Split(o.Body, "\n")
			for k := 0; k < len(ol)/3; k++ {
				lines = append(lines, ol[r.Intn(len(ol))])
			}
		}
		s := b.Clone()
		s.Name = fmt.Sprintf("%s-%04d", b.Name, i)
		s.Body = strings.Join(lines, "\n")
		s.Tags = append(slices.Clone(b.Tags), o1.Tags[0])
		if i%10 == 0 {
			s.Agents = []string{"other-agent"}
		}
		if i%17 == 0 {
			s.Status = StatusDisabled
		}
		data, err := Format(s)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(skillsDir, s.Name), 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(skillsDir, s.Name, FileName), data, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return dir, skillsDir
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

// BenchmarkContext1000 measures one turn's retrieval and rendering
// (Provider.Context: BM25 through FTS5, filtering, budgeted rendering) on a
// library of 1,000 skills, cycling through the labelled user turns, and
// reports p50/p99 latency per call. The per-term FTS5 results are cached
// (steady state: the terms of earlier turns were seen before).
func BenchmarkContext1000(b *testing.B) { benchContext(b, false, false) }

// BenchmarkContext1000Cold is the same with the term cache emptied before
// every turn and no background warming (a conversation whose every word is
// new): the terms are served by the in-memory BM25 index built when the
// library was indexed.
func BenchmarkContext1000Cold(b *testing.B) { benchContext(b, true, false) }

// BenchmarkContext1000ColdFTS5 is the cold turn without the in-memory
// index (as when it could not be built): one FTS5 bm25 query over the whole
// expression per turn.
func BenchmarkContext1000ColdFTS5(b *testing.B) { benchContext(b, true, true) }

func benchContext(b *testing.B, cold, noIndex bool) {
	lib := syntheticLibrary(b, 1000)
	if noIndex {
		s := *lib.snap.Load()
		s.kw = nil
		lib.snap.Store(&s)
	}
	var queries [][]string
	for _, c := range loadLabelled(b, "testdata/retrieval.jsonl") {
		queries = append(queries, c.Texts)
	}
	p := NewProvider(lib, ProviderOptions{TopK: 6, MaxTokens: 1500})
	ctx := context.Background()
	lib.noWarm = cold
	for _, q := range queries { // warm up: prepared statement, page cache, term cache
		if _, err := p.Context(ctx, core.Query{Agent: "default", UserTexts: q}); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if cold {
			lib.terms.reset()
		}
		start := time.Now()
		sec, err := p.Context(ctx, core.Query{Agent: "default", UserTexts: queries[i%len(queries)]})
		lat = append(lat, time.Since(start))
		if err != nil || len(sec.IDs) == 0 {
			b.Fatalf("no skills for %q: %v", queries[i%len(queries)], err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
}

// BenchmarkContextRender1000 adds what the core does with the section on
// the request path (core.Render: markers, and a token count of the block)
// to BenchmarkContext1000, to show where the rest of a turn's injection
// time goes.
func BenchmarkContextRender1000(b *testing.B) {
	lib := syntheticLibrary(b, 1000)
	var queries [][]string
	for _, c := range loadLabelled(b, "testdata/retrieval.jsonl") {
		queries = append(queries, c.Texts)
	}
	p := NewProvider(lib, ProviderOptions{TopK: 6, MaxTokens: 1500})
	ctx := context.Background()
	for _, q := range queries {
		p.Context(ctx, core.Query{Agent: "default", UserTexts: q})
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		sec, _ := p.Context(ctx, core.Query{Agent: "default", UserTexts: queries[i%len(queries)]})
		inj := core.Render([]core.Section{sec})
		lat = append(lat, time.Since(start))
		if inj.Block == "" {
			b.Fatal("nothing rendered")
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkBM25Index1000 measures building the in-memory BM25 index of
// 1,000 skills from the FTS5 index (done on every re-index that changes
// the indexed content).
func BenchmarkBM25Index1000(b *testing.B) {
	lib := syntheticLibrary(b, 1000)
	snap := lib.snap.Load()
	ctx := context.Background()
	b.ResetTimer()
	var ix *bm25Index
	for i := 0; i < b.N; i++ {
		var err error
		if ix, err = buildBM25Index(ctx, lib.r, snap.index, snap.df); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(ix.terms.Len()), "terms")
	b.ReportMetric(float64(ix.postings), "postings")
}

// BenchmarkLibraryHeap1000 reports what a library of 1,000 skills keeps on
// the heap once opened: every GC cycle of the daemon marks it beside the
// requests. live-MB is the heap it holds; scan-MB the part of it that may
// hold pointers (runtime/metrics /gc/scan/heap:bytes), which is what
// marking has to read; objects the heap objects it adds
// (/gc/heap/objects:objects), each one the mark phase visits. The
// tokenizer's vocabulary is loaded beforehand so it is not counted here
// (host/tokens' BenchmarkWarmHeap measures it). The figures are deltas of
// the live heap after a full GC, so they do not depend on timing.
func BenchmarkLibraryHeap1000(b *testing.B) {
	dir, skillsDir := writeSyntheticLibrary(b, 1000)
	st := openStore(b, dir)
	tokens.Warm()
	var d heapstat.Figures
	for i := 0; i < b.N; i++ {
		h0 := heapstat.Now()
		lib, err := Open(context.Background(), Options{Dir: skillsDir, Store: st, Log: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		d = heapstat.Now().Minus(h0)
		runtime.KeepAlive(lib)
		lib.Close()
	}
	b.ReportMetric(float64(d.Live)/(1<<20), "live-MB")
	b.ReportMetric(float64(d.Scan)/(1<<20), "scan-MB")
	b.ReportMetric(float64(d.Objects), "objects")
}

// agentQuestions are n user turns shaped like proxybench's loaded
// scenario (tools/proxybench/loaded.go): an agent-style request whose
// content words are drawn Zipf-distributed from the bank's vocabulary, so
// that most of them are in tens or hundreds of the synthetic skills.
func agentQuestions(tb testing.TB, n int, seed int64) [][]string {
	tb.Helper()
	seen := map[string]bool{}
	var words []string
	for _, name := range bank.Names() {
		raw, err := fs.ReadFile(bank.FS(), name+"/"+FileName)
		if err != nil {
			tb.Fatal(err)
		}
		for _, w := range strings.FieldsFunc(strings.ToLower(string(raw)), func(r rune) bool { return r < 'a' || r > 'z' }) {
			if len(w) > 3 && !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	r := rand.New(rand.NewSource(seed))
	z := rand.NewZipf(r, 1.07, 3, uint64(len(words)-1))
	phrase := func(k int) string {
		out := make([]string, k)
		for i := range out {
			out[i] = words[z.Uint64()]
		}
		return strings.Join(out, " ")
	}
	qs := make([][]string, n)
	for i := range qs {
		qs[i] = []string{"Can you help me " + phrase(3) + " the " + phrase(4) + " and make sure it handles " + phrase(2) + "?"}
	}
	return qs
}

// BenchmarkContextAgent1000 is BenchmarkContext1000 with proxybench's
// loaded question shape (agentQuestions) instead of the labelled turns:
// its terms are common in the library, so each has long postings.
func BenchmarkContextAgent1000(b *testing.B) {
	lib := syntheticLibrary(b, 1000)
	queries := agentQuestions(b, 500, 7)
	p := NewProvider(lib, ProviderOptions{TopK: 6, MaxTokens: 1500})
	ctx := context.Background()
	for _, q := range queries {
		if _, err := p.Context(ctx, core.Query{Agent: "default", UserTexts: q}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.Context(ctx, core.Query{Agent: "default", UserTexts: queries[i%len(queries)]}); err != nil {
			b.Fatal(err)
		}
	}
}
