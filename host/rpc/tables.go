package rpc

import (
	"strings"
	"sync"
	"time"
)

// TraceInfo is what a hook registered for one W3C trace id.
type TraceInfo struct {
	Agent    string
	Session  string
	TurnType string
	Client   string
	// What the hook's context call injected, for the proxy to record with
	// the turn when it sees the block already in the request.
	InjectedIDs    []string
	InjectedTokens int
}

type traceEntry struct {
	info       TraceInfo
	registered bool // by a hook (else only seen by the proxy)
	proxied    bool // an upstream request with this trace went through the proxy
	expires    time.Time
}

// traceTable maps trace ids to identities, bounded in size and time.
type traceTable struct {
	mu    sync.Mutex
	m     map[string]*traceEntry
	max   int
	ttl   time.Duration
	clock func() time.Time
}

func newTraceTable(max int, ttl time.Duration) *traceTable {
	return &traceTable{m: map[string]*traceEntry{}, max: max, ttl: ttl, clock: time.Now}
}

func (t *traceTable) register(id string, info TraceInfo, ttl time.Duration) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock()
	e := t.get(id, now)
	if e == nil {
		e = &traceEntry{}
		t.put(id, e, now)
	}
	e.info, e.registered = info, true
	e.expires = now.Add(ttl)
	return e.expires
}

// resolve is the proxy's lookup: it returns the registered identity and
// remembers that the proxy saw this trace (so hooks do not record the same
// turn a second time), even when no hook registered it.
func (t *traceTable) resolve(id string) (TraceInfo, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock()
	e := t.get(id, now)
	if e == nil {
		e = &traceEntry{expires: now.Add(t.ttl)}
		t.put(id, e, now)
	}
	e.proxied = true
	return e.info, e.registered
}

// lookup returns what a hook registered, without marking the trace proxied.
func (t *traceTable) lookup(id string) (TraceInfo, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.get(id, t.clock())
	if e == nil || !e.registered {
		return TraceInfo{}, false
	}
	return e.info, true
}

func (t *traceTable) proxied(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.get(id, t.clock())
	return e != nil && e.proxied
}

// shorten keeps an ended run's trace only a little longer (late hooks).
func (t *traceTable) shorten(id string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock()
	if e := t.get(id, now); e != nil && e.expires.After(now.Add(d)) {
		e.expires = now.Add(d)
	}
}

func (t *traceTable) dropSession(session string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, e := range t.m {
		if e.info.Session == session {
			delete(t.m, id)
		}
	}
}

func (t *traceTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

func (t *traceTable) get(id string, now time.Time) *traceEntry {
	e := t.m[id]
	if e != nil && now.After(e.expires) {
		delete(t.m, id)
		return nil
	}
	return e
}

func (t *traceTable) put(id string, e *traceEntry, now time.Time) {
	if len(t.m) >= t.max {
		t.evict(now)
	}
	t.m[id] = e
}

// evict drops expired entries, then the ones expiring soonest.
func (t *traceTable) evict(now time.Time) {
	for id, e := range t.m {
		if now.After(e.expires) {
			delete(t.m, id)
		}
	}
	for len(t.m) >= t.max {
		var oldest string
		var at time.Time
		for id, e := range t.m {
			if oldest == "" || e.expires.Before(at) {
				oldest, at = id, e.expires
			}
		}
		delete(t.m, oldest)
	}
}

// ttlSet is a bounded set of keys that expire (turn keys, ended sessions,
// last prompts).
type ttlSet[V any] struct {
	mu    sync.Mutex
	m     map[string]ttlValue[V]
	max   int
	ttl   time.Duration
	clock func() time.Time
}

type ttlValue[V any] struct {
	v  V
	at time.Time
}

func newTTLSet[V any](max int, ttl time.Duration) *ttlSet[V] {
	return &ttlSet[V]{m: map[string]ttlValue[V]{}, max: max, ttl: ttl, clock: time.Now}
}

func (s *ttlSet[V]) put(k string, v V) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putLocked(k, v)
}

func (s *ttlSet[V]) putLocked(k string, v V) {
	now := s.clock()
	if _, ok := s.m[k]; !ok && len(s.m) >= s.max {
		for key, e := range s.m {
			if now.Sub(e.at) > s.ttl {
				delete(s.m, key)
			}
		}
		for len(s.m) >= s.max {
			var oldest string
			var at time.Time
			for key, e := range s.m {
				if oldest == "" || e.at.Before(at) {
					oldest, at = key, e.at
				}
			}
			delete(s.m, oldest)
		}
	}
	s.m[k] = ttlValue[V]{v: v, at: now}
}

func (s *ttlSet[V]) get(k string) (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[k]
	if !ok || s.clock().Sub(e.at) > s.ttl {
		delete(s.m, k)
		var zero V
		return zero, false
	}
	return e.v, true
}

// add puts k and reports whether it was new.
func (s *ttlSet[V]) add(k string, v V) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[k]; ok && s.clock().Sub(e.at) <= s.ttl {
		return false
	}
	s.putLocked(k, v)
	return true
}

func (s *ttlSet[V]) del(k string) {
	s.mu.Lock()
	delete(s.m, k)
	s.mu.Unlock()
}

func (s *ttlSet[V]) dropPrefix(prefix string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if strings.HasPrefix(k, prefix) {
			delete(s.m, k)
		}
	}
}
