package core

import (
	"context"
	"errors"
	"sync"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// Reasons a session starts.
const (
	// StartFirstTurn: Context saw a session id it had never seen (a new
	// X-Session-Id, a derived session of a client that sends none, the
	// first prompt of an OpenClaw session).
	StartFirstTurn = "first_turn"
	// StartAnnounced: a client hook said so (OpenClaw session_start).
	StartAnnounced = "session_start"
	// StartResumed: an ended session (reset, idle, client) is used again;
	// OpenClaw's /new keeps an explicit session id.
	StartResumed = "resumed"
)

// SessionStart is what OnSessionStart listeners hear the first time the
// core sees a session: the moment to finish work for the agent's earlier
// sessions (memory ingests their pending turns) before the new session's
// first retrieval. Earlier sessions are not ended: the user may go back.
type SessionStart struct {
	SessionID string `json:"session_id"`
	Agent     string `json:"agent"`
	Scope     Scope  `json:"scope"`
	Reason    string `json:"reason"`
	// Resumed: the id belongs to an ended session, whose own turns are
	// earlier work too.
	Resumed bool `json:"resumed,omitempty"`
}

// SessionStartListener runs on the caller's goroutine before the new
// session's first retrieval, so it must bound its own time and carry on in
// the background beyond that (memory waits memory.session_start_wait_ms).
type SessionStartListener func(ctx context.Context, s SessionStart)

// maxTrackedSessions bounds the set of sessions seen; when full it is
// cleared, and the store answers for sessions that have turns.
const maxTrackedSessions = 100000

// sessionTracker remembers which sessions the core has seen.
type sessionTracker struct {
	mu        sync.Mutex
	seen      map[string]struct{}
	starting  map[string]*sessionStarting // sessions whose start listeners run
	listeners []SessionStartListener
}

// sessionStarting is a session start in progress: done closes when its
// listeners return; waiters counts the turns waiting for that.
type sessionStarting struct {
	done    chan struct{}
	waiters int
}

// forgetSession makes an ended session's next use a start again.
func (c *Core) forgetSession(id string) {
	c.sessions.mu.Lock()
	delete(c.sessions.seen, id)
	c.sessions.mu.Unlock()
}

// OnSessionStart registers a listener for new sessions.
func (c *Core) OnSessionStart(l SessionStartListener) {
	c.sessions.mu.Lock()
	c.sessions.listeners = append(c.sessions.listeners, l)
	c.sessions.mu.Unlock()
}

// StartSession announces a session (a client's session-start hook) and runs
// the listeners unless the session was seen before. It reports whether they ran.
func (c *Core) StartSession(ctx context.Context, s SessionStart) bool {
	if s.Reason == "" {
		s.Reason = StartAnnounced
	}
	return c.noteSession(ctx, s)
}

// noteSession runs the session-start listeners the first time a session
// id is seen: not in the tracker, and either unknown to the store or ended
// there (an open session that continues after a restart is not new).
func (c *Core) noteSession(ctx context.Context, s SessionStart) bool {
	if s.SessionID == "" {
		return false
	}
	if s.Agent == "" {
		s.Agent = "default"
	}
	t := &c.sessions
	t.mu.Lock()
	listeners := t.listeners
	_, seen := t.seen[s.SessionID]
	if seen {
		// A start still running (announced by a hook whose caller stopped
		// waiting, or one this turn came alongside) is waited for as the
		// start itself would have been: the listeners bound their own time.
		st := t.starting[s.SessionID]
		if st != nil {
			st.waiters++
		}
		t.mu.Unlock()
		if st != nil {
			select {
			case <-st.done:
			case <-ctx.Done():
			}
		}
		return false
	}
	if len(listeners) == 0 {
		t.mu.Unlock()
		return false
	}
	if t.seen == nil || len(t.seen) >= maxTrackedSessions {
		t.seen = map[string]struct{}{}
	}
	t.seen[s.SessionID] = struct{}{}
	if t.starting == nil {
		t.starting = map[string]*sessionStarting{}
	}
	st := &sessionStarting{done: make(chan struct{})}
	t.starting[s.SessionID] = st
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		if t.starting[s.SessionID] == st {
			delete(t.starting, s.SessionID)
		}
		t.mu.Unlock()
		close(st.done)
	}()
	switch sess, err := c.st.Session(ctx, s.SessionID); {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		c.log.Warn().Err(err).Str("session", s.SessionID).Msg("session lookup failed; not treated as new")
		return false
	case sess.EndedAt == nil:
		return false
	default:
		s.Resumed = true
		if s.Reason == StartFirstTurn {
			s.Reason = StartResumed
		}
	}
	c.log.Debug().Str("session", s.SessionID).Str("agent", s.Agent).Str("reason", s.Reason).Msg("session started")
	for _, l := range listeners {
		func() {
			defer func() {
				if r := recover(); r != nil {
					c.log.Error().Interface("panic", r).Str("session", s.SessionID).Msg("session-start listener panicked; the turn proceeds")
				}
			}()
			l(ctx, s)
		}()
	}
	return true
}
