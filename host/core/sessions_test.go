package core

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
)

type startLog struct {
	mu     sync.Mutex
	starts []SessionStart
}

func (l *startLog) listen(_ context.Context, s SessionStart) {
	l.mu.Lock()
	l.starts = append(l.starts, s)
	l.mu.Unlock()
}

func (l *startLog) all() []SessionStart {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]SessionStart(nil), l.starts...)
}

func TestSessionStartRunsOncePerNewSession(t *testing.T) {
	c, st := newCore(t, Options{})
	var log startLog
	c.OnSessionStart(log.listen)
	ctx := context.Background()
	q := Query{Agent: "ops", SessionID: "s1", Scope: Scope{UserID: "u"}, UserTexts: []string{"hi"}}
	c.Context(ctx, q)
	c.Context(ctx, q)
	if got := log.all(); len(got) != 1 || got[0].SessionID != "s1" || got[0].Agent != "ops" || got[0].Scope.Key() != "user:u" || got[0].Reason != StartFirstTurn {
		t.Fatalf("starts %+v", got)
	}

	// Announced by a hook first: the first Context does not start it again.
	if !c.StartSession(ctx, SessionStart{SessionID: "s2"}) || c.StartSession(ctx, SessionStart{SessionID: "s2"}) {
		t.Fatal("StartSession should run the listeners exactly once")
	}
	c.Context(ctx, Query{SessionID: "s2"})
	if got := log.all(); len(got) != 2 || got[1].Reason != StartAnnounced || got[1].Agent != "default" {
		t.Fatalf("starts %+v", got)
	}

	// A session with recorded turns (a restart, or one only observed so far)
	// continues: it is not new.
	if err := st.RecordTurns(ctx, []*store.Turn{{SessionID: "old", Agent: "ops", TurnType: TurnMain, Status: 200, RequestJSON: "{}"}}); err != nil {
		t.Fatal(err)
	}
	c.Context(ctx, Query{Agent: "ops", SessionID: "old"})
	// No session id: nothing to start.
	c.Context(ctx, Query{Agent: "ops"})
	if got := log.all(); len(got) != 2 {
		t.Fatalf("starts %+v", got)
	}

	// An ended session used again (OpenClaw's /new keeps an explicit id) starts again.
	if err := st.RecordTurns(ctx, []*store.Turn{{SessionID: "s1", Agent: "ops", TurnType: TurnMain, Status: 200, RequestJSON: "{}"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.EndSession(ctx, "s1", "reset"); err != nil {
		t.Fatal(err)
	}
	c.Context(ctx, q)
	c.Context(ctx, q)
	if got := log.all(); len(got) != 3 || !got[2].Resumed || got[2].Reason != StartResumed || got[2].SessionID != "s1" {
		t.Fatalf("starts %+v", got)
	}
}

func TestSessionStartListenerPanicDoesNotFailTheTurn(t *testing.T) {
	c, _ := newCore(t, Options{})
	c.OnSessionStart(func(context.Context, SessionStart) { panic("boom") })
	var log startLog
	c.OnSessionStart(log.listen)
	c.AddProvider(&fakeProvider{name: "m", sec: Section{Title: "Memories", Body: "kept"}})
	inj := c.Context(context.Background(), Query{SessionID: "p"})
	if inj.Block == "" || len(log.all()) != 1 {
		t.Fatalf("block %q, starts %+v", inj.Block, log.all())
	}
}

// orderedProvider notes when retrieval runs.
type orderedProvider struct{ events *eventLog }

func (orderedProvider) Name() string { return "ordered" }
func (p orderedProvider) Context(context.Context, Query) (Section, error) {
	p.events.add("retrieved")
	return Section{Title: "Memories", Body: "x"}, nil
}

type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

// TestFirstTurnWaitsForAnAnnouncedStart: a hook announces the session and
// its caller gives up before the catch-up ends (a relay's call timeout);
// the session's first retrieval still comes after the catch-up, as it
// would had the first turn started the session itself.
func TestFirstTurnWaitsForAnAnnouncedStart(t *testing.T) {
	c, _ := newCore(t, Options{})
	var events eventLog
	entered, release := make(chan struct{}), make(chan struct{})
	c.OnSessionStart(func(_ context.Context, s SessionStart) {
		close(entered)
		<-release
		events.add("caught up")
	})
	c.AddProvider(orderedProvider{&events})
	ctx := context.Background()
	go c.StartSession(ctx, SessionStart{SessionID: "n"}) // its caller does not wait
	<-entered
	turn := make(chan Injection)
	go func() { turn <- c.Context(ctx, Query{SessionID: "n"}) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) { // until the turn waits for the start
		c.sessions.mu.Lock()
		waiting := c.sessions.starting["n"].waiters
		c.sessions.mu.Unlock()
		if waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first turn did not wait for the running start")
		}
	}
	close(release)
	if inj := <-turn; inj.Block == "" {
		t.Fatal("no block")
	}
	events.mu.Lock()
	defer events.mu.Unlock()
	if len(events.events) != 2 || events.events[0] != "caught up" {
		t.Fatalf("events %v", events.events)
	}
	c.sessions.mu.Lock()
	defer c.sessions.mu.Unlock()
	if len(c.sessions.starting) != 0 {
		t.Fatalf("starts left running: %v", c.sessions.starting)
	}
}
