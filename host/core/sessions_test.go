package core

import (
	"context"
	"sync"
	"testing"

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
