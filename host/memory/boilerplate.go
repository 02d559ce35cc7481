package memory

import (
	"context"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/sqlconn"
)

// Boilerplate is a sentence that recurs verbatim across many of a user's
// turns — a reminder the client appends to every feedback message ("Keep
// this in mind as you continue with the next task."), a signature, a
// template line. It carries no new information, so it is removed from a
// turn's text before any extractor reads it. Each scope and agent keeps the
// sentence hashes of its last ringTurns user turns in memory (after a
// restart the ring refills within a few turns).

const (
	ringTurns = 64
	// A sentence is boilerplate once it was in boilerplateMin turns of the
	// ring and in at least boilerplateShare of the turns since it first was.
	boilerplateMin   = 3
	boilerplateShare = 0.2
	// Shorter sentences ("Thanks!", "OK.") are not counted: they say
	// nothing either way.
	boilerplateWords = 4
	maxRingScopes    = 1024
)

type phraseRing struct {
	mu     sync.Mutex
	scopes map[string]*scopeRing
}

type scopeRing struct {
	turns  [ringTurns][]uint64
	n      int            // turns recorded
	counts map[uint64]int // turns of the ring holding the sentence
	first  map[uint64]int // index of the first of them
	known  map[uint64]bool
}

func sentenceHash(s string) (uint64, bool) {
	words := strings.Fields(strings.ToLower(s))
	if len(words) < boilerplateWords {
		return 0, false
	}
	h := fnv.New64a()
	h.Write([]byte(strings.Join(words, " ")))
	return h.Sum64(), true
}

// splitSentences returns the distinct countable sentences of a text.
func splitSentences(text string) ([]string, []uint64) {
	var ss []string
	var hs []uint64
	seen := map[uint64]bool{}
	for _, line := range strings.Split(text, "\n") {
		for _, s := range sentences(line) {
			if h, ok := sentenceHash(s); ok && !seen[h] {
				seen[h] = true
				ss = append(ss, s)
				hs = append(hs, h)
			}
		}
	}
	return ss, hs
}

func (p *phraseRing) ring(key string) *scopeRing {
	if p.scopes == nil {
		p.scopes = map[string]*scopeRing{}
	}
	r := p.scopes[key]
	if r == nil {
		if len(p.scopes) >= maxRingScopes {
			clear(p.scopes)
		}
		r = &scopeRing{counts: map[uint64]int{}, first: map[uint64]int{}, known: map[uint64]bool{}}
		p.scopes[key] = r
	}
	return r
}

// observe records a user turn of key.
func (p *phraseRing) observe(key, text string) {
	_, hs := splitSentences(text)
	if len(hs) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.ring(key)
	slot := r.n % ringTurns
	for _, h := range r.turns[slot] { // the oldest turn leaves the ring
		if r.counts[h]--; r.counts[h] <= 0 {
			delete(r.counts, h)
			delete(r.first, h)
		}
	}
	for _, h := range hs {
		if r.counts[h] == 0 {
			r.first[h] = r.n
		}
		r.counts[h]++
	}
	r.turns[slot] = hs
	r.n++
}

// strip returns text without the sentences that are boilerplate for key
// (as observed so far: observe a batch's turns first, then strip them),
// and (with mark) those of them found to be boilerplate for the first time:
// what was learned from them before is retracted.
func (p *phraseRing) strip(key, text string, mark bool) (string, []string) {
	ss, hs := splitSentences(text)
	var drop, fresh []string
	p.mu.Lock()
	if r := p.scopes[key]; r != nil {
		for i, h := range hs {
			c := r.counts[h]
			if c < boilerplateMin {
				continue
			}
			since := r.n - max(r.first[h], r.n-ringTurns)
			if float64(c) >= boilerplateShare*float64(since) {
				drop = append(drop, ss[i])
				if mark && !r.known[h] {
					if len(r.known) > 4096 {
						clear(r.known)
					}
					r.known[h] = true
					fresh = append(fresh, ss[i])
				}
			}
		}
	}
	p.mu.Unlock()
	for _, d := range drop {
		text = strings.ReplaceAll(text, d, "")
	}
	return text, fresh
}

// boilerplateSentence is a sentence found to be boilerplate in a scope.
type boilerplateSentence struct {
	scope, agent, text string
}

// retractBoilerplate supersedes the units learned from a sentence now known
// to be boilerplate (what the heuristic reads in it, word for word).
func (s *Store) retractBoilerplate(ctx context.Context, tx *sqlconn.Tx, b boilerplateSentence, now time.Time) error {
	for _, c := range ExtractText(b.text) {
		u := Unit{Scope: b.scope, Content: normalizeContent(c.Content)}
		if c.Type == Episodic {
			u.Agent = b.agent
		}
		u.vis = visToken(u.Scope, u.Agent)
		similar, err := similarUnits(ctx, tx, &u)
		if err != nil {
			return err
		}
		for i := range similar {
			if normKey(similar[i].Content) == normKey(u.Content) {
				if err := supersede(ctx, tx, &similar[i], "", now, "boilerplate: repeated verbatim on most messages"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
