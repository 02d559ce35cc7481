package memory

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// BenchmarkIngestJob is one ingest job as the proxy's turns cause it (what
// learning costs beside requests, per memory.ingest_every_turns = 5 turns):
// five recorded agent turns, each a 6 KB system prompt, a question and an
// answer, with the memories injected into them, ingested by HandleIngest
// (the job handler, with a job's cancellable context) into a store of
// 10,000 units. Recording the turns is outside the timing.
//
// The injection log is folded every injectFoldAt rows (~32 jobs at 512):
// run enough jobs (-benchtime=320x) for pages/op to include its share;
// BENCH_INJECT_FOLD_AT sets another bound.
func BenchmarkIngestJob(b *testing.B) { benchIngestJob(b, 40, "job") }

// BenchmarkIngestJobSpread is BenchmarkIngestJob with the three facts of
// each turn drawn from the whole library (proxybench's questions find
// facts all over it), so the injection log names ~10 times more units
// and a fold rewrites as many more unit pages.
func BenchmarkIngestJobSpread(b *testing.B) { benchIngestJob(b, 10_000, "jobspread") }

// benchIngestJob runs ingest jobs whose turns inject three standing units
// and three of the first facts units of the store (seeded under key).
func benchIngestJob(b *testing.B, facts int, key string) {
	s := seeded(b, 10_000, key)
	if v, err := strconv.Atoi(os.Getenv("BENCH_INJECT_FOLD_AT")); err == nil && v > 0 {
		s.injectFoldAt = v
	}
	st := s.turns.(*store.SQLite)
	in := NewIngester(st, s, IngesterOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	units, err := s.List(ctx, Filter{Limit: facts})
	if err != nil || len(units) < facts {
		b.Fatalf("%d units, %v", len(units), err)
	}
	sys := strings.Repeat("You are a coding agent working in the user's repository. Follow the workspace rules and keep answers short. ", 56)[:6000]
	c := newCorpus(5)
	payload, _ := json.Marshal(IngestJob{SessionID: "job"})
	frames, cpu, spawned, looked := 0, int64(0), uint64(0), int64(0)
	runtime.LockOSThread() // the SQLite driver runs on the caller's goroutine: this thread's CPU is the job's
	defer runtime.UnlockOSThread()
	// How long the job holds the writer (its batch's transaction, from the
	// first statement to the commit's end), in time and this thread's CPU.
	var held, heldCPU, heldMax, heldCPUMax time.Duration
	var t0 time.Time
	var c0 int64
	onWriter := func(begun bool) {
		c, _ := threadCPU()
		if begun {
			t0, c0 = time.Now(), c
			return
		}
		d := time.Since(t0)
		held, heldMax = held+d, max(heldMax, d)
		heldCPU += time.Duration(c - c0)
		heldCPUMax = max(heldCPUMax, time.Duration(c-c0))
	}
	s.onWriter.Store(&onWriter)
	defer s.onWriter.Store(nil)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		turns := make([]*store.Turn, 5)
		for j := range turns {
			body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]any{
				{"role": "system", "content": sys}, {"role": "user", "content": "Can you help me " + c.phrase(3) + " the " + c.phrase(4) + "?"}}})
			var injected []string
			for k := range 6 { // three standing rules in every turn, three facts of the question
				u := units[k]
				if k >= 3 {
					u = units[3+c.r.Intn(facts-3)]
				}
				injected = append(injected, "memory:"+u.ID)
			}
			inj, _ := json.Marshal(injected)
			turns[j] = &store.Turn{SessionID: "job", Agent: "main", TurnType: core.TurnMain, ClientAPI: "openai", UpstreamAPI: "openai",
				RequestJSON: string(body), ResponseText: "Sure: " + c.phrase(30), Status: 200, MemoryScope: "user:bench", InjectedJSON: string(inj)}
		}
		if err := st.RecordTurns(ctx, turns); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Writer().Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			b.Fatal(err)
		}
		walBefore := walFrames(b, st)
		g0 := goroutinesCreated()
		p0 := pagesLookedUp(b, st)
		cpu0, _ := threadCPU()
		b.StartTimer()
		if err := in.HandleIngest(ctx, payload); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu1, _ := threadCPU()
		looked += pagesLookedUp(b, st) - p0
		cpu += cpu1 - cpu0
		spawned += goroutinesCreated() - g0
		frames += walFrames(b, st) - walBefore
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(frames)/float64(b.N), "pages/op")
	b.ReportMetric(float64(spawned)/float64(b.N), "goroutines/op")
	b.ReportMetric(float64(looked)/float64(b.N), "pages-read/op")
	if _, ok := threadCPU(); ok {
		b.ReportMetric(float64(cpu)/1e3/float64(b.N), "cpu-µs/op")
		b.ReportMetric(float64(heldCPU.Microseconds())/float64(b.N), "held-cpu-µs/op")
		b.ReportMetric(float64(heldCPUMax.Microseconds()), "held-cpu-max-µs")
	}
	b.ReportMetric(float64(held.Microseconds())/float64(b.N), "held-µs/op")
	b.ReportMetric(float64(heldMax.Microseconds()), "held-max-µs")
	if n, _ := in.Pending(ctx); n != 0 {
		b.Fatalf("%d turns left pending", n)
	}
}

// goroutinesCreated counts the goroutines the process has started: an
// ingest job's are mostly the SQL driver's cancellation watchers (one per
// statement run with a cancellable context), which wake beside requests.
func goroutinesCreated() uint64 {
	m := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(m)
	if m[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return m[0].Value.Uint64()
}

// walFrames is how many pages the write-ahead log holds: the pages
// committed since it was last truncated (the store checkpoints only past
// 4 MB, so an op's growth after a truncation is the pages it wrote).
func walFrames(b *testing.B, st *store.SQLite) int {
	b.Helper()
	var size int64
	var seq int
	var name, path string
	if err := st.Writer().QueryRow("PRAGMA page_size").Scan(&size); err != nil {
		b.Fatal(err)
	}
	if err := st.Writer().QueryRow("PRAGMA database_list").Scan(&seq, &name, &path); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		return 0
	}
	if fi.Size() <= 32 {
		return 0
	}
	return int((fi.Size() - 32) / (size + 24))
}

// BenchmarkJobQueueCycle is the durable job queue's own cost per job: its
// enqueue, claim and finish, three commits on the store's one writer (what
// every ingest job paid before it was queued in memory; session-end and
// evolution jobs still do), in a queue holding 2,000 finished jobs.
func BenchmarkJobQueueCycle(b *testing.B) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, b.TempDir()+"/"+store.DBFile)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	cycle := func() {
		if _, err := st.EnqueueJob(ctx, JobIngest, `{"session_id":"bench"}`, time.Time{}); err != nil {
			b.Fatal(err)
		}
		j, err := st.ClaimJob(ctx, []string{JobIngest}, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		if err := st.FinishJob(ctx, j.ID); err != nil {
			b.Fatal(err)
		}
	}
	for range 2000 {
		cycle()
	}
	frames, cpu := 0, int64(0)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if _, err := st.Writer().Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			b.Fatal(err)
		}
		walBefore := walFrames(b, st)
		cpu0, _ := threadCPU()
		b.StartTimer()
		cycle()
		b.StopTimer()
		cpu1, _ := threadCPU()
		cpu += cpu1 - cpu0
		frames += walFrames(b, st) - walBefore
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(frames)/float64(b.N), "pages/op")
	if _, ok := threadCPU(); ok {
		b.ReportMetric(float64(cpu)/1e3/float64(b.N), "cpu-µs/op")
	}
}
