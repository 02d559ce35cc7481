package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/trace"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/memory"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/skills"
	"github.com/metaclaw-go/metaclaw/host/skills/bank"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// The loaded scenario: the full proxy with a learned state — memories and
// skills wired exactly as the daemon wires them, memory.* and skills.*
// at their defaults (ingestion every 5 turns and its jobs running in the
// background) — against the upstream directly and a bare
// httputil.ReverseProxy, with sequential requests shaped like an agent's:
// a 6 KB system prompt and a new user question each time.

// loadedHost starts the proxy with nMem memories (one user's scope: every
// memory competes) and nSkills skills.
func loadedHost(upstream string, nMem, nSkills int) (net.Listener, *core.Core, *store.SQLite, func(), error) {
	dir, err := os.MkdirTemp("", "proxybench-loaded")
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cleanup := []func(){func() { os.RemoveAll(dir) }}
	done := func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	fail := func(err error) (net.Listener, *core.Core, *store.SQLite, func(), error) {
		done()
		return nil, nil, nil, nil, err
	}
	ctx := context.Background()
	cfg := config.Default(dir)
	cfg.Skills.Dir = filepath.Join(dir, "skills")
	cfg.Skills.AutoEvolve = false // no evolver LLM here
	cfg.Memory.Enabled = true
	cfg.Memory.ManualTrigger = pauseLearning
	if err := writeSkills(cfg.Skills.Dir, nSkills); err != nil {
		return fail(err)
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(dir, store.DBFile))
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() { st.Close() })
	if err := seedMemories(ctx, st, nMem); err != nil {
		return fail(err)
	}
	// As the daemon: answers wait for the turn journal, not the commit.
	c := core.New(core.Options{Store: st, Log: zerolog.Nop(), SpoolDir: filepath.Join(dir, "turn-spool"), BackgroundNice: backgroundNice})
	cleanup = append(cleanup, func() { c.Close() })
	sh, err := skills.Assemble(ctx, cfg, st, c, zerolog.Nop(), skills.AssembleOptions{})
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() { sh.Close() })
	if n := len(sh.Lib.List()); n != nSkills {
		return fail(fmt.Errorf("loaded %d skills, want %d", n, nSkills))
	}
	mh, err := memory.Assemble(ctx, cfg, st, c, zerolog.Nop(), memory.AssembleOptions{})
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() { mh.Close() })
	routes := append(append([]route.Route(nil), sh.Routes...), mh.Routes...)
	px, err := proxy.New(proxy.Options{Core: c, Log: zerolog.Nop(), UpstreamAPI: apiformat.OpenAI, UpstreamBase: upstream + "/v1", UpstreamKey: "k", Routes: routes})
	if err != nil {
		return fail(err)
	}
	h := px.Handler()
	if requestRegions {
		h = regionEach(h)
	}
	ln := serve(h)
	cleanup = append(cleanup, func() { ln.Close() })
	return ln, c, st, done, nil
}

// learningCatchUp waits (at most 30 s) until the recorder has committed
// every turn and no job is pending or running, and returns how long that
// took and the jobs pending at the start: learning's backlog at the last
// answer. It polls the jobs (durable and transient) alone (store.Counts scans every turn's
// body: polled, it would be the catch-up's largest CPU cost).
func learningCatchUp(c *core.Core, st *store.SQLite) (time.Duration, int) {
	t0 := time.Now()
	ctx := context.Background()
	if err := c.Flush(ctx); err != nil {
		return 0, -1
	}
	first := -1
	for time.Since(t0) < 30*time.Second {
		n, err := st.ActiveJobs(ctx)
		if err != nil {
			return 0, -1
		}
		n += c.TransientInFlight() // memory's ingest jobs are queued in memory
		if first < 0 {
			first = n
		}
		if n == 0 {
			return time.Since(t0), first
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(t0), first
}

// writeSkills writes n skills derived from the built-in bank (each a bank
// skill with lines of two others mixed in, so their words overlap like a
// real library's).
func writeSkills(dir string, n int) error {
	var base []*skills.Skill
	for _, name := range bank.Names() {
		raw, err := fs.ReadFile(bank.FS(), name+"/"+skills.FileName)
		if err != nil {
			return err
		}
		s, err := skills.Parse(raw)
		if err != nil {
			return err
		}
		base = append(base, s)
	}
	r := rand.New(rand.NewSource(42))
	for i := 0; i < n; i++ {
		b := base[i%len(base)]
		lines := strings.Split(b.Body, "\n")
		for _, o := range []*skills.Skill{base[r.Intn(len(base))], base[r.Intn(len(base))]} {
			ol := strings.Split(o.Body, "\n")
			for k := 0; k < len(ol)/3; k++ {
				lines = append(lines, ol[r.Intn(len(ol))])
			}
		}
		s := b.Clone()
		s.Name = fmt.Sprintf("%s-%04d", b.Name, i)
		s.Body = strings.Join(lines, "\n")
		data, err := skills.Format(s)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, s.Name), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, s.Name, skills.FileName), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// vocabulary is what the synthetic memories and questions are made of:
// the words of the skill bank, so questions reach both layers.
func vocabulary() []string {
	seen := map[string]bool{}
	var words []string
	for _, name := range bank.Names() {
		raw, _ := fs.ReadFile(bank.FS(), name+"/"+skills.FileName)
		for _, w := range strings.FieldsFunc(strings.ToLower(string(raw)), func(r rune) bool { return r < 'a' || r > 'z' }) {
			if len(w) > 3 && !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	return words
}

type sampler struct {
	words []string
	zipf  *rand.Zipf
	r     *rand.Rand
}

func newSampler(seed int64) *sampler {
	r := rand.New(rand.NewSource(seed))
	w := vocabulary()
	return &sampler{words: w, zipf: rand.NewZipf(r, 1.07, 3, uint64(len(w)-1)), r: r}
}

func (s *sampler) phrase(n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = s.words[s.zipf.Uint64()]
	}
	return strings.Join(out, " ")
}

// seedMemories writes n memories into the scope of the bench user, of every
// type, as learning would have (preferences and rules, facts, project state,
// events, session summaries).
func seedMemories(ctx context.Context, st *store.SQLite, n int) error {
	s := memory.Open(st, memory.Options{})
	sm := newSampler(1)
	now := time.Now()
	for done := 0; done < n; {
		batch := make([]memory.Unit, 0, 2000)
		for len(batch) < cap(batch) && done < n {
			u := memory.Unit{Scope: "user:bench", Importance: 0.4 + 0.55*sm.r.Float64(), Confidence: 0.6 + 0.35*sm.r.Float64(),
				Mentions: 1 + sm.r.Intn(3), SaidAt: now.Add(-time.Duration(sm.r.Intn(200*24)) * time.Hour), Origin: "bench"}
			switch p := sm.r.Intn(20); {
			case p < 5:
				u.Type, u.Content, u.Tags = memory.Preference, "Always "+sm.phrase(3)+" before "+sm.phrase(2+sm.r.Intn(4))+".", []string{"rule"}
				u.Subject, u.Value = "rule:"+sm.phrase(2), "+"
			case p < 10:
				u.Type, u.Content, u.Subject = memory.Semantic, "The user's "+sm.phrase(1)+" is "+sm.phrase(2+sm.r.Intn(6))+".", "fact:my "+sm.phrase(1)
			case p < 15:
				u.Type, u.Content = memory.ProjectState, "The team uses "+sm.phrase(2)+" for the "+sm.phrase(3+sm.r.Intn(6))+"."
			case p < 19:
				u.Type, u.Content = memory.Episodic, "Today the team shipped "+sm.phrase(4+sm.r.Intn(8))+"."
			default:
				u.Type, u.Agent = memory.WorkingSummary, "default"
				u.Content = "Session of 6 exchanges. Began with: “" + sm.phrase(10) + "”. Ended with: “" + sm.phrase(10) + "”."
			}
			u.LastSeenAt = u.SaidAt
			batch = append(batch, u)
			done++
		}
		if err := s.BulkInsert(ctx, batch); err != nil {
			return err
		}
	}
	return s.Optimize(ctx)
}

// agentBody is a sequential agent turn: a 6 KB system prompt (with
// block, when given, appended as the proxy appends it) and a question in
// new words.
func agentBody(sm *sampler, block string) string {
	sys := strings.Repeat("You are a coding agent working in the user's repository. Follow the workspace rules and keep answers short. ", 56)[:6000]
	if block != "" {
		b, _ := json.Marshal(sys + "\n\n" + block)
		sys = string(b[1 : len(b)-1])
	}
	q := "Can you help me " + sm.phrase(3) + " the " + sm.phrase(4) + " and make sure it handles " + sm.phrase(2) + "?"
	return `{"model":"m","messages":[{"role":"system","content":"` + sys + `"},{"role":"user","content":"` + q + `"}]}`
}

// sampleBlock is the block the loaded proxy injects into the first of the
// loaded turns (seed 7), as its core renders it.
func sampleBlock(c *core.Core) string {
	sm := newSampler(7)
	sm.phrase(0)
	q := "Can you help me " + sm.phrase(3) + " the " + sm.phrase(4) + " and make sure it handles " + sm.phrase(2) + "?"
	return c.Context(context.Background(), core.Query{Agent: "default", SessionID: "bench-block", Scope: core.Scope{UserID: "bench"}, UserTexts: []string{q}}).Block
}

// loadedBodies are n sequential agent turns; block, when given, is in every
// system prompt already.
func loadedBodies(n int, seed int64, block string) []string {
	sm := newSampler(seed)
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = agentBody(sm, block)
	}
	return bodies
}

// runLoaded sends the bodies in turn to url as the bench user, in one
// session (an agent's conversation; a new session would first catch up with
// the user's pending turns, see docs/memory.md).
// With gc, it reads the GC's counts before each request and after the last,
// and returns the GC figures of the run too.
func runLoaded(client *http.Client, url string, bodies []string, seed int64, gc *gcProbe) (result, gcRun) {
	n := len(bodies)
	lat := make([]time.Duration, n)
	var cpu0 gcCPU
	if gc != nil {
		cpu0 = readGCCPU()
	}
	start := time.Now()
	for i := range bodies {
		if gc != nil {
			gc.observe()
		}
		// A region per request, so a trace shows which requests were slow
		// and what the proxy's goroutines did meanwhile.
		trace.WithRegion(context.Background(), "request", func() {
			lat[i] = onceAs(client, url, bodies[i], "bench", fmt.Sprintf("bench-%d", seed))
		})
	}
	elapsed := time.Since(start)
	var g gcRun
	if gc != nil {
		gc.observe()
		g = gcFigures(gc.obs, lat, cpu0, readGCCPU())
	}
	return summarize(lat, elapsed), g
}

// requestRegions makes loadedHost wrap each request in a "request" trace
// region on the server's side: -processes' MetaClaw child, whose client is
// in another process, traces its requests so.
var requestRegions bool

func regionEach(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trace.WithRegion(r.Context(), "request", func() { h.ServeHTTP(w, r) })
	})
}
