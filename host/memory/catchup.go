package memory

import (
	"context"
	"database/sql"
	"hash/fnv"
	"regexp"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/transcript"
)

// What a new session sees. A session with fewer than
// memory.ingest_every_turns turns is otherwise ingested only when it ends
// (memory.session_idle_minutes of silence), so a rule said five minutes ago
// in another chat would be missing. When a session starts (core
// OnSessionStart), the pending turns of the same agent's earlier sessions in
// the same scope are ingested before the new session's first retrieval:
// synchronously within memory.session_start_wait_ms, in the background
// beyond it. The earlier sessions stay open; their cursors make sure nothing
// is mined twice. With an LLM extractor the heuristic goes first
// (provisional.go) and the LLM's result replaces it when it arrives.

// catchUpTimeout bounds the background part of one catch-up.
const catchUpTimeout = 2 * time.Minute

// maxCatchUpSessions bounds the earlier sessions one catch-up ingests.
const maxCatchUpSessions = 100

// OnSessionStart is the core's session-start listener.
func (in *Ingester) OnSessionStart(ctx context.Context, s core.SessionStart) {
	select {
	case in.catchups <- struct{}{}:
	default:
		// Enough catch-ups are running; their sessions' batches and ends
		// still ingest everything.
		in.log.Debug().Str("session", s.SessionID).Msg("memory: catch-up skipped, others running")
		return
	}
	done := make(chan struct{})
	in.catchingUp.Add(1)
	go func() {
		defer in.catchingUp.Done()
		defer close(done)
		defer func() { <-in.catchups }() // the slot is free before the waiter moves on
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), catchUpTimeout)
		defer cancel()
		start := time.Now()
		except := s.SessionID
		if s.Resumed {
			except = "" // its own turns are the earlier conversation
		}
		res, err := in.CatchUp(bg, s.Agent, s.Scope.Key(), except)
		ev := in.log.Debug()
		if err != nil {
			ev = in.log.Warn().Err(err)
		}
		ev.Str("session", s.SessionID).Str("agent", s.Agent).Int("turns", res.Turns).Int("added", res.Added).
			Dur("took", time.Since(start)).Msg("memory: caught up with the agent's earlier sessions")
	}()
	if in.startWait <= 0 {
		return
	}
	t := time.NewTimer(in.startWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		in.log.Warn().Str("session", s.SessionID).Str("agent", s.Agent).Dur("waited", in.startWait).
			Msg("memory: catch-up still running after memory.session_start_wait_ms; the first turn proceeds without it")
	case <-ctx.Done():
	}
}

// waitCatchUps waits for the running catch-ups, background parts included.
func (in *Ingester) waitCatchUps() { in.catchingUp.Wait() }

// CatchUp ingests the pending turns of agent's sessions in scope other than
// except (provisionally first when the extractor is an LLM). The sessions
// stay open.
func (in *Ingester) CatchUp(ctx context.Context, agent, scope, except string) (IngestResult, error) {
	var total IngestResult
	if in.flush != nil {
		if err := in.flush(ctx); err != nil { // turns observed just before are persisted first
			return total, err
		}
	}
	sessions, err := in.pendingSessionsOf(ctx, agent, scope, except)
	if err != nil {
		return total, err
	}
	quick := in.quick()
	for _, s := range sessions {
		in.mu.Lock()
		delete(in.counts, s)
		in.mu.Unlock()
		var res IngestResult
		if quick {
			res, err = in.provisional(ctx, s)
			if err == nil && in.enqueue != nil {
				err = in.enqueue(ctx, IngestJob{SessionID: s}) // the real extraction, which replaces it
			}
		} else {
			res, err = in.IngestSession(ctx, s, false)
		}
		total.add(res)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// pendingSessionsOf lists sessions of agent in scope with pending turns.
func (in *Ingester) pendingSessionsOf(ctx context.Context, agent, scope, except string) ([]string, error) {
	pending, err := pendingRefs(ctx, in.mem.r, in.st, store.TurnFilter{SideToo: in.side, OfAgent: true, Agent: agent, Scope: scope, ExceptSession: except})
	if err != nil {
		return nil, err
	}
	return sessionsOf(pending, maxCatchUpSessions), nil
}

// scanStrings reads a one-column result and closes it.
func scanStrings(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// lockStripes serialise ingestion per session (striped: a collision only
// makes two sessions wait for each other).
type lockStripes [64]sync.Mutex

func (in *Ingester) lockFor(l *lockStripes, session string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(session))
	return &l[h.Sum32()%uint32(len(l))]
}

// durableEN and durableZH spot statements the user marks as lasting: they
// are ingested at once instead of waiting for the batch.
var (
	durableEN = regexp.MustCompile(`(?i)\b(?:remember (?:that|this)|keep in mind|note that|don'?t forget|from now on|going forward|from here on|henceforth|in (?:the )?future)\b|` +
		`(?:^|[.!?;:\n]\s*)(?:(?:please|and|also|so)[,\s]+)*(?:(?:you|we)\s+(?:should|must|will)\s+)?(?:always|never|do not ever|don'?t ever)\b`)
	durableZH = regexp.MustCompile(strings.Join(durableMarkers, "|"))
)

// Durable reports whether a user's text marks something as lasting
// ("remember that …", "from now on …", "always/never …", 记住, 以后, 永远不要 …).
func Durable(text string) bool {
	return durableEN.MatchString(text) || durableZH.MatchString(text)
}

// checkDurable looks at a persisted turn's new user text off the recorder
// goroutine (parsing a large request takes a millisecond) and enqueues the
// session's ingestion when it is durable. At most two checks run at once;
// beyond that the turn waits for its batch like any other.
func (in *Ingester) checkDurable(session, requestJSON string) {
	if !mayBeDurable(requestJSON) {
		return
	}
	select {
	case in.checks <- struct{}{}:
	default:
		return
	}
	go func() {
		defer func() { <-in.checks }()
		if !Durable(transcript.UserText(requestJSON)) {
			return
		}
		in.mu.Lock()
		delete(in.counts, session)
		in.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := in.enqueueOnce(ctx, session); err != nil {
			in.log.Warn().Err(err).Str("session", session).Msg("memory: could not enqueue ingestion of a durable statement; its batch will")
		}
	}()
}

// durableMarkers are the Chinese markers: durableZH is their alternation,
// and mayBeDurable looks for them as plain substrings.
var durableMarkers = []string{"记住", "记得", "记一下", "记下", "以后", "今后", "从现在开始", "从今以后", "往后", "总是", "始终", "永远", "务必", "一定要", "必须", "千万", "绝对不要", "不要再", "别再"}

// durableEscapes is text that can become a durable word only once
// decoded: JSON \u escapes and HTML character references (a client's
// envelope is unescaped).
var durableEscapes = []string{`\u`, "&"}

// durableFolds are the two non-ASCII letters (?i) folds onto ASCII ones
// (KELVIN SIGN, LONG S): a word holding one can match once case-folded.
var durableFolds = []string{"\u212a", "\u017f"}

// mayBeDurable reports whether a request body can hold a durable
// statement, without decoding it: false when, in the raw JSON of the user
// messages UserText reads (transcript.TrailingUserJSON; the whole body
// when that declines), no word Durable's English expression starts with
// occurs (at a word boundary, in any case) and none of the Chinese markers
// occurs. Most turns end here, so the per-turn check costs a validation
// pass and a scan of the new user message instead of a JSON parse; the
// system prompt and the history (6 KB and more of an agent's body) are
// not scanned. It says "maybe" wrongly, never "no" for a body whose user
// text Durable matches — except text that Clean joins by removing an
// envelope from the middle of a word, which then waits for its batch like
// any other turn.
func mayBeDurable(body string) bool {
	var buf [4][]byte
	parts, ok := transcript.TrailingUserJSON(body, buf[:0])
	if !ok {
		return mayHoldDurable(body)
	}
	for _, p := range parts {
		if mayHoldDurable(unsafe.String(unsafe.SliceData(p), len(p))) {
			return true
		}
	}
	return false
}

// mayHoldDurable is mayBeDurable's scan of raw JSON text.
func mayHoldDurable(body string) bool {
	for _, u := range durableEscapes {
		if strings.Contains(body, u) {
			return true
		}
	}
	if !isASCII(body) {
		for _, u := range durableFolds {
			if strings.Contains(body, u) {
				return true
			}
		}
		for _, m := range durableMarkers {
			if strings.Contains(body, m) {
				return true
			}
		}
	}
	// One pass over the words (a table lookup a byte: the compare chain of
	// isWordByte made this loop most of the check, ~4 ns a byte). The text
	// is raw JSON: the letter of an escape (`\n`, `\t` …) is not part of
	// the next word, or "line one\nremember that …" would read "nremember".
	for i := 0; i < len(body); {
		if body[i] == '\\' {
			i += 2
			continue
		}
		if !wordBytes[body[i]] {
			i++
			continue
		}
		j := i + 1
		for j < len(body) && wordBytes[body[j]] {
			j++
		}
		if durableLead(body[i:j], body[j:]) {
			return true
		}
		i = j
	}
	return false
}

// wordBytes is isWordByte as a table.
var wordBytes = func() (t [256]bool) {
	for c := range t {
		t[c] = isWordByte(byte(c))
	}
	return t
}()

// isWordByte is regexp's \w (ASCII).
func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// durableLead reports whether word (followed by rest) can start a match of
// durableEN: a word it starts with, with the words that must follow.
func durableLead(word, rest string) bool {
	switch len(word) { // the lengths and first letters of the words below
	case 4, 5, 6, 8, 10:
	default:
		return false
	}
	switch word[0] | 0x20 {
	case 'r', 'f', 'h', 'a', 'n', 'e', 'k', 'g':
	default:
		return false
	}
	switch len(word) {
	case 4:
		switch {
		case wordIs(word, "ever"):
			return true
		case wordIs(word, "keep"):
			return hasPrefixFold(rest, " in mind")
		case wordIs(word, "note"):
			return hasPrefixFold(rest, " that")
		case wordIs(word, "from"):
			return hasPrefixFold(rest, " now on") || hasPrefixFold(rest, " here on")
		}
	case 5:
		switch {
		case wordIs(word, "never"):
			return true
		case wordIs(word, "going"):
			return hasPrefixFold(rest, " forward")
		}
	case 6:
		return wordIs(word, "forget") || wordIs(word, "future") || wordIs(word, "always")
	case 8:
		return wordIs(word, "remember")
	case 10:
		return wordIs(word, "henceforth")
	}
	return false
}

// wordIs reports whether word, made of word bytes, is lower (lower-case
// letters, as long as word) in any case: OR 0x20 lowers a letter and
// turns no other word byte into one.
func wordIs(word, lower string) bool {
	for i := 0; i < len(lower); i++ {
		if word[i]|0x20 != lower[i] {
			return false
		}
	}
	return true
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
