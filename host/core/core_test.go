package core

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/tokens"
	"github.com/metaclaw-go/metaclaw/internal/jsonstr"
	"github.com/metaclaw-go/metaclaw/internal/testwait"
)

func newCore(t *testing.T, o Options) (*Core, *store.SQLite) {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	o.Store = st
	o.Log = zerolog.Nop()
	c := New(o)
	t.Cleanup(func() { c.Close(); st.Close() })
	return c, st
}

type fakeProvider struct {
	name  string
	sec   Section
	err   error
	delay time.Duration
	panic bool
	seen  atomic.Value
}

func (p *fakeProvider) Name() string { return p.name }
func (p *fakeProvider) Context(ctx context.Context, q Query) (Section, error) {
	p.seen.Store(q)
	if p.panic {
		panic("boom")
	}
	if p.delay > 0 {
		select {
		case <-time.After(p.delay):
		case <-ctx.Done():
			return Section{}, ctx.Err()
		}
	}
	return p.sec, p.err
}

func TestContextRendersProvidersAndFailsOpen(t *testing.T) {
	tests := []struct {
		name      string
		providers []*fakeProvider
		wantIn    []string
		wantOut   []string
		wantIDs   int
	}{
		{"none", nil, nil, []string{block.Begin}, 0},
		{"one", []*fakeProvider{{name: "skills", sec: Section{Title: "Skills", Body: "### debug\nBisect.", IDs: []string{"skill:debug"}}}},
			[]string{block.Begin, "## Skills", "Bisect.", block.End}, nil, 1},
		{"ordered", []*fakeProvider{
			{name: "skills", sec: Section{Title: "Skills", Body: "S", IDs: []string{"s1"}}},
			{name: "memory", sec: Section{Title: "Memories", Body: "M", IDs: []string{"m1", "m2"}}}},
			[]string{"## Skills\n\nS\n\n## Memories\n\nM\n" + block.End}, nil, 3},
		{"failing provider skipped", []*fakeProvider{
			{name: "bad", err: errors.New("down")},
			{name: "slow", delay: time.Second, sec: Section{Title: "Slow", Body: "late"}},
			{name: "panics", panic: true},
			{name: "good", sec: Section{Title: "Memories", Body: "kept", IDs: []string{"m"}}}},
			[]string{"kept"}, []string{"late"}, 1},
		{"all empty", []*fakeProvider{{name: "e"}}, nil, []string{block.Begin}, 0},
		// The last provider runs on the caller's goroutine: it fails open too.
		{"late last provider skipped", []*fakeProvider{
			{name: "good", sec: Section{Title: "Memories", Body: "kept", IDs: []string{"m"}}},
			{name: "slow", delay: time.Second, sec: Section{Title: "Slow", Body: "late"}}},
			[]string{"kept"}, []string{"late"}, 1},
		{"panicking last provider skipped", []*fakeProvider{
			{name: "good", sec: Section{Title: "Memories", Body: "kept", IDs: []string{"m"}}},
			{name: "panics", panic: true}},
			[]string{"kept"}, nil, 1},
		{"failing only provider skipped", []*fakeProvider{{name: "bad", err: errors.New("down")}}, nil, []string{block.Begin}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newCore(t, Options{Window: 100 * time.Millisecond})
			for _, p := range tt.providers {
				c.AddProvider(p)
			}
			inj := c.Context(context.Background(), Query{Agent: "a", UserTexts: []string{"hi"}})
			for _, w := range tt.wantIn {
				if !strings.Contains(inj.Block, w) {
					t.Errorf("block lacks %q:\n%s", w, inj.Block)
				}
			}
			for _, w := range tt.wantOut {
				if strings.Contains(inj.Block, w) {
					t.Errorf("block has %q:\n%s", w, inj.Block)
				}
			}
			if len(inj.IDs) != tt.wantIDs {
				t.Errorf("ids %v, want %d", inj.IDs, tt.wantIDs)
			}
			if (inj.Block == "") != (inj.Tokens == 0) {
				t.Errorf("tokens %d for block %q", inj.Tokens, inj.Block)
			}
		})
	}
}

func TestScopeKey(t *testing.T) {
	tests := []struct {
		s    Scope
		want string
	}{
		{Scope{}, "default"},
		{Scope{UserID: "u"}, "user:u"},
		{Scope{WorkspaceID: "w"}, "workspace:w"},
		{Scope{UserID: "u", WorkspaceID: "w"}, "user:u|workspace:w"},
		{Scope{UserID: "u", Explicit: "team:x"}, "team:x"},
	}
	for _, tt := range tests {
		if got := tt.s.Key(); got != tt.want {
			t.Errorf("%+v.Key() = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestObservePersistsAndNotifies(t *testing.T) {
	c, st := newCore(t, Options{QueueSize: 4})
	var mu sync.Mutex
	var seen []int
	c.OnTurn(func(_ context.Context, tr *store.Turn) {
		mu.Lock()
		seen = append(seen, tr.TurnIndex)
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Observe(&store.Turn{SessionID: "s", Agent: "a", TurnType: TurnMain, RequestJSON: "{}", Status: 200})
		}()
	}
	wg.Wait()
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	stats, err := c.Stats(context.Background())
	if err != nil || stats.Turns != 50 || stats.ObservedSinceStart != 50 {
		t.Fatalf("stats %+v %v", stats, err)
	}
	mu.Lock()
	if len(seen) != 50 {
		t.Fatalf("listener saw %d turns", len(seen))
	}
	mu.Unlock()
	if err := c.EndSession(context.Background(), "s", "client"); err != nil {
		t.Fatal(err)
	}
	sess, _ := st.Session(context.Background(), "s")
	if sess.EndedAt == nil || sess.MainTurns != 50 {
		t.Fatalf("session %+v", sess)
	}
}

func TestCloseFlushesQueue(t *testing.T) {
	c, st := newCore(t, Options{})
	for i := 0; i < 20; i++ {
		c.Observe(&store.Turn{SessionID: "s", Agent: "a", TurnType: TurnMain, RequestJSON: "{}", Status: 200})
	}
	c.Close()
	// Observe after Close still persists (synchronously).
	c.Observe(&store.Turn{SessionID: "s", Agent: "a", TurnType: TurnMain, RequestJSON: "{}", Status: 200})
	counts, _ := st.Counts(context.Background())
	if counts.Turns != 21 {
		t.Fatalf("turns after close = %d", counts.Turns)
	}
}

func TestSessionEndJobsRunWithRetry(t *testing.T) {
	c, st := newCore(t, Options{})
	var calls atomic.Int32
	got := make(chan SessionEnd, 1)
	other := make(chan struct{}, 1)
	c.OnSessionEnd("other_end", func(context.Context, json.RawMessage) error { other <- struct{}{}; return nil })
	c.OnSessionEnd("flaky_end", func(_ context.Context, payload json.RawMessage) error {
		if calls.Add(1) == 1 {
			return errors.New("transient")
		}
		var se SessionEnd
		if err := json.Unmarshal(payload, &se); err != nil {
			return err
		}
		got <- se
		return nil
	})
	c.Observe(&store.Turn{SessionID: "s9", Agent: "a", TurnType: TurnMain, RequestJSON: "{}", Status: 200})
	if err := c.EndSession(context.Background(), "s9", "client"); err != nil {
		t.Fatal(err)
	}
	select {
	case se := <-got:
		if se.SessionID != "s9" || se.Reason != "client" {
			t.Fatalf("payload %+v", se)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("session_end job never succeeded")
	}
	select {
	case <-other:
	case <-time.After(10 * time.Second):
		t.Fatal("second session-end subscriber never ran")
	}
	if calls.Load() != 2 {
		t.Fatalf("flaky handler ran %d times, want 2 (one failure, one success)", calls.Load())
	}
	testwait.For(t, "the job to finish", func() bool {
		counts, _ := st.Counts(context.Background())
		return counts.PendingJobs == 0
	})
}

func TestIdleSessionsAreEnded(t *testing.T) {
	c, st := newCore(t, Options{SessionIdle: 40 * time.Millisecond})
	c.Observe(&store.Turn{SessionID: "quiet", Agent: "a", TurnType: TurnMain, RequestJSON: "{}", Status: 200})
	c.Flush(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		sess, _ := st.Session(context.Background(), "quiet")
		if sess.EndedAt != nil {
			if sess.EndReason != "idle" {
				t.Fatalf("reason %q", sess.EndReason)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("idle session never ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTools(t *testing.T) {
	c, _ := newCore(t, Options{})
	c.RegisterTool(Tool{Name: "b_echo", Description: "echo", InputSchema: json.RawMessage(`{"type":"object"}`),
		Call: func(_ context.Context, q Query, args json.RawMessage) (any, error) {
			return map[string]any{"agent": q.Agent, "args": string(args)}, nil
		}})
	c.RegisterTool(Tool{Name: "a_panic", Call: func(context.Context, Query, json.RawMessage) (any, error) { panic("boom") }})
	if tools := c.Tools(); len(tools) != 2 || tools[0].Name != "a_panic" {
		t.Fatalf("tools %+v", tools)
	}
	got, err := c.CallTool(context.Background(), "b_echo", Query{Agent: "x"}, nil)
	if err != nil || got.(map[string]any)["args"] != "{}" || got.(map[string]any)["agent"] != "x" {
		t.Fatalf("call %v %v", got, err)
	}
	if _, err := c.CallTool(context.Background(), "a_panic", Query{}, nil); err == nil {
		t.Fatal("panic not turned into an error")
	}
	var unknown ErrUnknownTool
	if _, err := c.CallTool(context.Background(), "nope", Query{}, nil); !errors.As(err, &unknown) {
		t.Fatalf("unknown: %v", err)
	}
}

func TestRenderTokensUseSectionCounts(t *testing.T) {
	body := strings.Repeat("Reproduce the failure, then bisect. ", 40)
	measured := Render([]Section{{Title: "Skills", Body: body, Tokens: tokensCount(body)}})
	full := Render([]Section{{Title: "Skills", Body: body}})
	if measured.Block != full.Block {
		t.Fatal("blocks differ")
	}
	// Summing per-section counts plus the frame stays within a few tokens of a full count.
	if d := measured.Tokens - full.Tokens; d < -4 || d > 4 {
		t.Fatalf("measured %d vs full %d", measured.Tokens, full.Tokens)
	}
}

func tokensCount(s string) int { return tokens.Count(s) }

// TestRenderFrameCountByTitles: the frame's count is remembered by the
// titles present, so each combination counts its own frame, the first
// time and after.
func TestRenderFrameCountByTitles(t *testing.T) {
	a := Section{Title: "Skills", Body: "S body", Tokens: 3}
	b := Section{Title: "Memories of a much longer title", Body: "M body", Tokens: 5}
	for round := 0; round < 2; round++ {
		for _, secs := range [][]Section{{a}, {b}, {a, b}, {b, a}, {a, {Title: "Empty"}, b}} {
			want := tokens.Count(frameOf(secs))
			for _, s := range secs {
				want += s.Tokens
			}
			if got := Render(secs).Tokens; got != want {
				t.Errorf("round %d, %d sections: tokens %d, want %d", round, len(secs), got, want)
			}
		}
	}
}

// TestLazyBlockWritesWhatRenderWrote: the block written out lazily is the
// block as Render always wrote it (markers, header, a titled part per
// section with a body, trimmed), and its JSON form is the escaped text
// byte for byte, invalid UTF-8, control characters and U+2028 included.
func TestLazyBlockWritesWhatRenderWrote(t *testing.T) {
	render := func(secs []Section) string { // Render before it was lazy
		var b strings.Builder
		for _, s := range secs {
			body := strings.TrimSpace(s.Body)
			if body == "" {
				continue
			}
			if b.Len() == 0 {
				b.WriteString(block.Begin + blockHeader)
			}
			b.WriteString("\n## " + s.Title + "\n\n" + body + "\n")
		}
		if b.Len() == 0 {
			return ""
		}
		return b.String() + block.End
	}
	for _, secs := range [][]Section{
		nil,
		{{Title: "Empty", Body: " \n"}},
		{{Title: "Skills", Body: "  ### debugging\nReproduce \"it\", then\tbisect.\n\n", IDs: []string{"skill:a"}}, {Title: "Memories", Body: "- tabs <b>&</b>", IDs: []string{"memory:1", "memory:2"}}},
		{{Title: "Bad \xe2", Body: "\xe2\x80 cut rune \u2028 sep \u2029 \x01\x1f \xff\xfe end \xf0\x9f\x98"}, {Title: "Tail", Body: "\x80\x80\x80\x80 ünïcødé 😀"}},
	} {
		l := RenderLazy(secs)
		want := render(secs)
		if got := l.String(); got != want {
			t.Fatalf("String:\n%q\nwant\n%q", got, want)
		}
		if l.Len() != len(want) {
			t.Fatalf("Len %d, want %d", l.Len(), len(want))
		}
		if got, want := string(l.AppendJSON([]byte("x"))), "x"+string(jsonstr.AppendBody(nil, want)); got != want {
			t.Fatalf("AppendJSON:\n%q\nwant\n%q", got, want)
		}
		if inj := Render(secs); inj.Block != want || len(inj.IDs) != len(l.IDs) || inj.Tokens != l.Tokens {
			t.Fatalf("Render %+v, lazy %+v", inj, l)
		}
	}
}

// BenchmarkContext is the core's part of a main turn with two providers
// (skills and memory shaped, each measuring its own tokens): their start,
// the wait for both, and the rendered block.
func BenchmarkContext(b *testing.B) {
	st, err := store.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), store.DBFile))
	if err != nil {
		b.Fatal(err)
	}
	c := New(Options{Store: st, Log: zerolog.Nop()})
	defer func() { c.Close(); st.Close() }()
	for _, p := range []*fakeProvider{
		{name: "skills", sec: Section{Title: "Skills", Body: strings.Repeat("### debugging\nReproduce, bisect, fix, add a test.\n\n", 30), Tokens: 400, IDs: []string{"skill:a"}}},
		{name: "memory", sec: Section{Title: "Memories", Body: strings.Repeat("- The user prefers short answers.\n", 30), Tokens: 300, IDs: []string{"memory:a"}}},
	} {
		c.AddProvider(p)
	}
	q := Query{Agent: "a", SessionID: "s", UserTexts: []string{"refactor the parser"}}
	c.Context(context.Background(), q) // the session's start
	b.ReportAllocs()
	for b.Loop() {
		if inj := c.Context(context.Background(), q); inj.Tokens == 0 {
			b.Fatal("nothing injected")
		}
	}
}
