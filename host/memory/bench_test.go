package memory

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/skills/bank"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// Benchmarks: retrieval + rendering (what the request path pays) at 10,000
// and 100,000 units in one scope (the worst case: every unit competes), with
// queries of three recent user messages — from the in-memory index (the
// request path) and, for comparison, from SQLite; and ingestion throughput.
//
//	go test -run '^$' -bench 'Retrieve|Ingest' -benchmem -benchtime 2000x ./host/memory/
//
// Each retrieval benchmark reports p50-µs and p99-µs per operation (wall
// clock: it moves with whatever else the machine runs), cpu-µs/op (the CPU
// time of the retrieving thread: steadier on a shared machine), allocations,
// and load1 (the one-minute load average when it ended, to judge the
// latencies by). The WhileLearning variants store a new preference (a
// standing unit: the scope's pool changes) before every fourth retrieval,
// outside the timings, as the proxy learns between turns.

var (
	benchMu    sync.Mutex
	benchDirs  []string
	benchStore = map[string]*Store{}
)

func TestMain(m *testing.M) {
	flag.Parse()
	if flag.Lookup("test.bench").Value.String() == "" {
		// Ingestion reads request bodies as views of SQLite's memory that
		// end with each callback: every test here fails if it keeps one.
		// (Not in benchmarks: the copy would be measured.)
		store.PoisonTurnViews(true)
	}
	code := m.Run()
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// corpus makes pronounceable words with a Zipf-like frequency.
type corpus struct {
	words []string
	zipf  *rand.Zipf
	r     *rand.Rand
}

// newCorpus makes one vocabulary (always the same) sampled with seed.
func newCorpus(seed int64) *corpus {
	r := rand.New(rand.NewSource(1))
	cons, vow := "bcdfghjklmnprstvwz", "aeiou"
	seen := map[string]bool{}
	var words []string
	for len(words) < 6000 {
		var b strings.Builder
		for s := 0; s < 2+r.Intn(2); s++ {
			b.WriteByte(cons[r.Intn(len(cons))])
			b.WriteByte(vow[r.Intn(len(vow))])
		}
		if w := b.String(); !seen[w] && !stopEN[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	r = rand.New(rand.NewSource(seed))
	return &corpus{words: words, zipf: rand.NewZipf(r, 1.07, 3, uint64(len(words)-1)), r: r}
}

func (c *corpus) word() string { return c.words[c.zipf.Uint64()] }

func (c *corpus) phrase(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = c.word()
	}
	return strings.Join(ws, " ")
}

func (c *corpus) unit(scope string, now time.Time) Unit {
	r := c.r
	u := Unit{Scope: scope, Importance: 0.4 + 0.55*r.Float64(), Confidence: 0.6 + 0.35*r.Float64(), Mentions: 1 + r.Intn(3),
		SaidAt: now.Add(-time.Duration(r.Intn(200*24)) * time.Hour), Origin: "bench"}
	switch p := r.Intn(20); {
	case p < 5:
		u.Type, u.Content, u.Subject = Preference, "The user prefers "+c.phrase(3)+" for "+c.phrase(2+r.Intn(4))+".", "pref:"+c.word()
	case p < 10:
		u.Type, u.Content, u.Subject = Semantic, "The user's "+c.word()+" is "+c.phrase(2+r.Intn(6))+".", "fact:my "+c.word()
	case p < 15:
		u.Type, u.Content = ProjectState, "The team uses "+c.phrase(2)+" for the "+c.phrase(3+r.Intn(6))+"."
	case p < 19:
		u.Type, u.Content = Episodic, "Today the team shipped "+c.phrase(4+r.Intn(8))+"."
	default:
		u.Type, u.Content = WorkingSummary, "Session of 6 exchanges. Began with: “"+c.phrase(10)+"”. Ended with: “"+c.phrase(10)+"”."
		u.Agent = "default"
	}
	u.LastSeenAt = u.SaidAt
	u.Entities = []string{c.word(), c.word()}
	return u
}

// query is three recent user messages, stop words included.
func (c *corpus) query() []string {
	out := make([]string, 3)
	for i := range out {
		out[i] = "Can you help me with the " + c.phrase(4+c.r.Intn(8)) + " and make sure it works with " + c.phrase(2+c.r.Intn(3)) + "?"
	}
	return out
}

// seeded returns a store holding n units in scope "user:bench" (built once
// per process and tag: a benchmark that writes has a store of its own).
func seeded(b *testing.B, n int, tag ...string) *Store {
	c := newCorpus(1)
	now := time.Now()
	return seedStore(b, fmt.Sprint(n, tag), n, 5000, func() Unit { return c.unit("user:bench", now) })
}

// seedStore returns the store of key, made on first use from n units of
// next, inserted batch at a time, with its index built.
func seedStore(b *testing.B, key string, n, batchSize int, next func() Unit) *Store {
	benchMu.Lock()
	defer benchMu.Unlock()
	if s, ok := benchStore[key]; ok {
		return s
	}
	dir, err := os.MkdirTemp("", "memory-bench")
	if err != nil {
		b.Fatal(err)
	}
	benchDirs = append(benchDirs, dir)
	st, err := store.OpenSQLite(context.Background(), filepath.Join(dir, store.DBFile))
	if err != nil {
		b.Fatal(err)
	}
	s := Open(st, Options{})
	start := time.Now()
	for done := 0; done < n; {
		batch := make([]Unit, 0, batchSize)
		for len(batch) < cap(batch) && done < n {
			batch = append(batch, next())
			done++
		}
		if err := s.BulkInsert(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	if os.Getenv("BENCH_NO_OPTIMIZE") == "" {
		if err := s.Optimize(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	t1 := time.Now()
	if err := s.StartIndex(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d units in %v, index built in %v", n, t1.Sub(start).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	benchStore[key] = s
	return s
}

func benchRetrieve(b *testing.B, n int, sqlite, learning bool) {
	var s *Store
	if learning {
		s = seeded(b, n, "learning")
	} else {
		s = seeded(b, n)
	}
	retrieve := s.Retrieve
	if sqlite {
		retrieve = func(ctx context.Context, q Query) (Result, error) {
			src, err := s.sqlSourceNow(ctx)
			if err != nil {
				return Result{}, err
			}
			return s.retrieveFrom(ctx, src, q, s.o.TopK, s.o.StandingK, s.o.MaxTokens, true)
		}
	}
	c := newCorpus(2)
	queries := make([][]string, 256)
	for i := range queries {
		queries[i] = c.query()
	}
	var learn func()
	if learning {
		learn = func() {
			if _, _, err := s.Add(context.Background(), NewUnit{Content: "I prefer " + c.phrase(3) + " for " + c.phrase(3) + ".", Type: Preference, Scope: "user:bench"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	runRetrievals(b, retrieve, queries, learn)
}

// runRetrievals times b.N retrievals of the queries in turn (learn, when
// given, writes before every fourth, outside the timings), after one to warm
// the caches a query touches (the standing units of the scope).
func runRetrievals(b *testing.B, retrieve func(context.Context, Query) (Result, error), queries [][]string, learn func()) {
	ctx := context.Background()
	if _, err := retrieve(ctx, Query{Scope: "user:bench", Agent: "default", Texts: queries[len(queries)-1]}); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	empty := 0
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0, cpuOK := threadCPU()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if learn != nil && i%4 == 0 {
			b.StopTimer()
			cpuW, _ := threadCPU()
			learn()
			cpuW2, _ := threadCPU()
			cpu0 += cpuW2 - cpuW // the write is not the retrieval's
			b.StartTimer()
		}
		t0 := time.Now()
		res, err := retrieve(ctx, Query{Scope: "user:bench", Agent: "default", Texts: queries[i%len(queries)], sectionOnly: true})
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		if res.Section.Body == "" {
			empty++
		}
	}
	b.StopTimer()
	reportCPU(b, cpu0, cpuOK)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	if load, ok := loadAverage(); ok {
		b.ReportMetric(load, "load1")
	}
	if empty == b.N {
		b.Fatal("every retrieval came back empty")
	}
}

// reportCPU reports the retrieving thread's CPU time per operation since
// cpu0 (when the platform gives it).
func reportCPU(b *testing.B, cpu0 int64, ok bool) {
	if cpu1, ok1 := threadCPU(); ok && ok1 {
		b.ReportMetric(float64(cpu1-cpu0)/1e3/float64(b.N), "cpu-µs/op")
	}
}

// benchAgentTurn is the request path as proxybench's loaded scenario drives
// it (tools/proxybench, loaded.go): memories and questions made of the skill
// bank's words, one new agent question per retrieval (never seen before, so
// its terms are split afresh), the store's default limits.
func benchAgentTurn(b *testing.B, n int) {
	s := seededAgent(b, n)
	sm := newBankSampler(7)
	queries := make([][]string, b.N+1)
	for i := range queries {
		queries[i] = []string{"Can you help me " + sm.phrase(3) + " the " + sm.phrase(4) + " and make sure it handles " + sm.phrase(2) + "?"}
	}
	runRetrievals(b, s.Retrieve, queries, nil)
}

// bankSampler draws the skill bank's words with proxybench's Zipf law.
type bankSampler struct {
	words []string
	zipf  *rand.Zipf
	r     *rand.Rand
}

func newBankSampler(seed int64) *bankSampler {
	seen := map[string]bool{}
	var words []string
	for _, name := range bank.Names() {
		raw, _ := fs.ReadFile(bank.FS(), name+"/SKILL.md")
		for _, w := range strings.FieldsFunc(strings.ToLower(string(raw)), func(r rune) bool { return r < 'a' || r > 'z' }) {
			if len(w) > 3 && !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	r := rand.New(rand.NewSource(seed))
	return &bankSampler{words: words, zipf: rand.NewZipf(r, 1.07, 3, uint64(len(words)-1)), r: r}
}

func (s *bankSampler) phrase(n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = s.words[s.zipf.Uint64()]
	}
	return strings.Join(out, " ")
}

// seededAgent is a store seeded as proxybench seeds its loaded scenario.
func seededAgent(b *testing.B, n int) *Store {
	sm := newBankSampler(1)
	now := time.Now()
	return seedStore(b, fmt.Sprint(n, "agent"), n, 2000, func() Unit {
		u := Unit{Scope: "user:bench", Importance: 0.4 + 0.55*sm.r.Float64(), Confidence: 0.6 + 0.35*sm.r.Float64(),
			Mentions: 1 + sm.r.Intn(3), SaidAt: now.Add(-time.Duration(sm.r.Intn(200*24)) * time.Hour), Origin: "bench"}
		switch p := sm.r.Intn(20); {
		case p < 5:
			u.Type, u.Content, u.Tags = Preference, "Always "+sm.phrase(3)+" before "+sm.phrase(2+sm.r.Intn(4))+".", []string{"rule"}
			u.Subject, u.Value = "rule:"+sm.phrase(2), "+"
		case p < 10:
			u.Type, u.Content, u.Subject = Semantic, "The user's "+sm.phrase(1)+" is "+sm.phrase(2+sm.r.Intn(6))+".", "fact:my "+sm.phrase(1)
		case p < 15:
			u.Type, u.Content = ProjectState, "The team uses "+sm.phrase(2)+" for the "+sm.phrase(3+sm.r.Intn(6))+"."
		case p < 19:
			u.Type, u.Content = Episodic, "Today the team shipped "+sm.phrase(4+sm.r.Intn(8))+"."
		default:
			u.Type, u.Agent = WorkingSummary, "default"
			u.Content = "Session of 6 exchanges. Began with: “" + sm.phrase(10) + "”. Ended with: “" + sm.phrase(10) + "”."
		}
		u.LastSeenAt = u.SaidAt
		return u
	})
}

// loadAverage is the one-minute load average (Linux).
func loadAverage() (float64, bool) {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	var l float64
	if _, err := fmt.Sscan(string(raw), &l); err != nil {
		return 0, false
	}
	return l, true
}

func BenchmarkRetrieve10k(b *testing.B)               { benchRetrieve(b, 10_000, false, false) }
func BenchmarkRetrieveAgentTurn10k(b *testing.B)      { benchAgentTurn(b, 10_000) }
func BenchmarkRetrieve100k(b *testing.B)              { benchRetrieve(b, 100_000, false, false) }
func BenchmarkRetrieveWhileLearning10k(b *testing.B)  { benchRetrieve(b, 10_000, false, true) }
func BenchmarkRetrieveWhileLearning100k(b *testing.B) { benchRetrieve(b, 100_000, false, true) }
func BenchmarkRetrieveSQLite10k(b *testing.B)         { benchRetrieve(b, 10_000, true, false) }

// BenchmarkIngest measures learning throughput: batches of 16 turns (a mix
// of statements the heuristic keeps and chatter it skips) extracted and
// consolidated into a store of 10,000 units, one transaction per batch.
func BenchmarkIngest(b *testing.B) {
	s := seeded(b, 10_000)
	c := newCorpus(3)
	lines := []string{
		"I prefer %s for %s.", "Always %s before %s.", "We use %s for the %s.", "My %s is %s.",
		"Can you look at the %s in %s?", "Thanks, that fixed the %s %s.", "Remember that the %s is %s.", "Never %s on %s.",
	}
	ctx := context.Background()
	const per = 16
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		turns := make([]Turn, per)
		for j := range turns {
			turns[j] = Turn{User: fmt.Sprintf(lines[c.r.Intn(len(lines))], c.phrase(2), c.phrase(2)), Assistant: "Sure: " + c.phrase(30)}
		}
		if _, err := s.Ingest(ctx, Batch{SessionID: fmt.Sprintf("b%d", i), Scope: "user:bench", Turns: turns}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*per)/time.Since(start).Seconds(), "turns/s")
}
