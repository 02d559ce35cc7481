package memory

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/safety"
	"github.com/metaclaw-go/metaclaw/internal/sqlconn"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// Batch is a set of turns to learn from (also the body of
// POST /v1/memory/ingest in MetaClaw's sidecar shape).
type Batch struct {
	SessionID string `json:"session_id"`
	// Scope and Agent apply to turns that name none.
	Scope string `json:"scope_id,omitempty"`
	Agent string `json:"agent,omitempty"`
	Turns []Turn `json:"turns"`
	// Final asks for the session's working summary, made from SummaryTurns
	// (or Turns when empty).
	Final        bool   `json:"final,omitempty"`
	SummaryTurns []Turn `json:"summary_turns,omitempty"`

	// after runs inside the write transaction (cursor, buffer bookkeeping),
	// so learning and its bookkeeping commit or roll back together.
	after func(ctx context.Context, tx *sqlconn.Tx) error
	// before runs first inside the write transaction (withdrawing the
	// provisional units of the turns this batch mines for real).
	before func(ctx context.Context, tx *sqlconn.Tx) error
	// yield, when set, waits for a gap between the answers in flight
	// (core.WaitForGap): learning's steps run beside requests, not
	// inside them.
	yield func(ctx context.Context)
	// provisional marks a quick pass (see provisional.go): extracted by
	// extractor, origin OriginProvisional, turns not marked as ingested,
	// what it did noted in log.
	provisional *provisionalPass
}

// IngestResult counts what a batch did.
type IngestResult struct {
	Added      int      `json:"added"`
	Reinforced int      `json:"reinforced"`
	Superseded int      `json:"superseded"`
	Skipped    int      `json:"skipped"` // turns already ingested (duplicates)
	Turns      int      `json:"turns"`   // turns mined
	IDs        []string `json:"ids,omitempty"`
}

func (r *IngestResult) add(o IngestResult) {
	r.Added += o.Added
	r.Reinforced += o.Reinforced
	r.Superseded += o.Superseded
	r.Skipped += o.Skipped
	r.Turns += o.Turns
	r.IDs = append(r.IDs, o.IDs...)
}

// Outcome of consolidating one candidate.
const (
	OutcomeAdded      = "added"
	OutcomeReinforced = "reinforced"
	OutcomeSuperseded = "superseded" // added, and replaced older units
	OutcomeStale      = "stale"      // added as superseded: a newer statement already says otherwise
)

// maxTurnText bounds how much of one message is mined.
const maxTurnText = 16000

// prepare fills in scope, agent and time, and redacts.
func (s *Store) prepare(b *Batch, t *Turn) {
	if t.Scope == "" {
		t.Scope = b.Scope
	}
	t.Scope = s.ScopeKey(t.Scope)
	if t.Agent == "" {
		t.Agent = b.Agent
	}
	if t.Agent == "" {
		t.Agent = "default"
	}
	if t.SessionID == "" {
		t.SessionID = b.SessionID
	}
	t.User = textclip.Prefix(t.User, maxTurnText)
	t.Assistant = textclip.Prefix(t.Assistant, maxTurnText)
	t.User = stripPasted(t.User) // what the user pasted for processing is not what they said (guard.go, pasted.go)
	var secrets []string
	t.User, secrets = safety.RedactCollect(t.User)
	t.Assistant, _ = Redact(t.Assistant)
	t.Assistant = safety.ScrubValues(t.Assistant, secrets) // the assistant repeating it back
}

// saidAt maps a turn's wall-clock time onto the store's clock (identity in
// production; tests that move the clock forward move statements with it).
func (s *Store) saidAt(t Turn) time.Time {
	now := s.now()
	if t.At.IsZero() {
		return now
	}
	return t.At.Add(now.Sub(time.Now()))
}

// Ingest extracts and consolidates a batch. Turns already ingested (same
// Source) are skipped, so a batch may be retried safely. Everything a batch
// writes commits in one transaction.
func (s *Store) Ingest(ctx context.Context, b Batch) (IngestResult, error) {
	var res IngestResult
	for i := range b.Turns {
		s.prepare(&b, &b.Turns[i])
	}
	for i := range b.SummaryTurns {
		s.prepare(&b, &b.SummaryTurns[i])
	}
	fresh, skipped, err := s.freshTurns(context.WithoutCancel(ctx), b.Turns) // one read: no watcher goroutine (see countInjected)
	if err != nil {
		return res, err
	}
	res.Skipped = skipped
	p := ingestPlan{fresh: fresh, boiler: s.stripBoilerplate(&b, fresh)}
	b.wait(ctx)
	ex := s.o.Extractor
	if b.provisional != nil {
		ex = b.provisional.extractor
	}
	cands, err := ex.Extract(ctx, p.fresh)
	if err != nil {
		return res, fmt.Errorf("memory: extract: %w", err)
	}
	summary, summaryTurn, err := s.summarizeBatch(ctx, &b)
	if err != nil {
		return res, err
	}
	p.now = s.now()
	s.planUnits(ctx, &b, &p, cands)
	if summary != nil {
		s.planSummary(ctx, &b, &p, *summary, summaryTurn)
	}
	p.vecs = s.embedUnits(ctx, p.units)
	b.wait(ctx) // not inside the transaction: that would hold the writer
	err = s.writeTx(ctx, func(tx *sqlconn.Tx) error {
		if f := s.onWriter.Load(); f != nil {
			(*f)(true)
		}
		return s.commitBatch(ctx, tx, &b, &p, &res)
	})
	if f := s.onWriter.Load(); f != nil {
		(*f)(false)
	}
	if err != nil {
		return IngestResult{}, err
	}
	return res, nil
}

// ingestPlan is what a batch will write: its fresh turns, the boilerplate
// found in them, and the units extracted (with the turn each came from and
// their embeddings).
type ingestPlan struct {
	fresh    []Turn
	boiler   []boilerplateSentence
	units    []Unit
	unitTurn []int // index into fresh, -1 for the summary
	vecs     [][]float32
	now      time.Time
}

// freshTurns drops the turns mined before (a retry, or a remote host
// resending) and counts them.
func (s *Store) freshTurns(ctx context.Context, turns []Turn) ([]Turn, int, error) {
	fresh := turns[:0:0]
	seen, err := s.seenSources(ctx, turns)
	if err != nil {
		return nil, 0, err
	}
	skipped := 0
	for _, t := range turns {
		if t.Source != "" && seen[t.Source] {
			skipped++
			continue
		}
		fresh = append(fresh, t)
	}
	return fresh, skipped, nil
}

// stripBoilerplate removes from the fresh turns the sentences recurring
// verbatim across the scope's turns (they say nothing new) and returns
// them. A provisional pass reads turns the real extraction reads again:
// only the real one counts them.
func (s *Store) stripBoilerplate(b *Batch, fresh []Turn) []boilerplateSentence {
	if b.provisional == nil {
		for _, t := range fresh {
			s.phrases.observe(t.Scope+"\x00"+t.Agent, t.User)
		}
	}
	var boiler []boilerplateSentence
	for i, t := range fresh {
		var found []string
		fresh[i].User, found = s.phrases.strip(t.Scope+"\x00"+t.Agent, t.User, b.provisional == nil)
		for _, f := range found {
			boiler = append(boiler, boilerplateSentence{t.Scope, t.Agent, f})
		}
	}
	return boiler
}

// summarizeBatch summarizes a final batch's session (nil when not final or
// there is nothing to say), with the turn the summary stands for.
func (s *Store) summarizeBatch(ctx context.Context, b *Batch) (*Candidate, Turn, error) {
	if !b.Final {
		return nil, Turn{}, nil
	}
	st := b.SummaryTurns
	if len(st) == 0 {
		st = b.Turns
	}
	// The summary quotes the user: not their boilerplate either.
	st = slices.Clone(st)
	for i, t := range st {
		st[i].User, _ = s.phrases.strip(t.Scope+"\x00"+t.Agent, t.User, false)
	}
	if len(st) == 0 {
		return nil, Turn{}, nil
	}
	c, ok, err := s.o.Extractor.Summarize(ctx, st)
	if err != nil {
		return nil, Turn{}, fmt.Errorf("memory: summarize: %w", err)
	}
	if !ok {
		return nil, Turn{}, nil
	}
	return &c, st[len(st)-1], nil
}

// planUnits turns the extracted candidates into admitted units.
func (s *Store) planUnits(ctx context.Context, b *Batch, p *ingestPlan, cands []Candidate) {
	p.units = make([]Unit, 0, len(cands)+1)
	p.unitTurn = make([]int, 0, len(cands)+1)
	for _, c := range cands {
		if c.Turn < 0 || c.Turn >= len(p.fresh) {
			continue
		}
		u, ok := s.candidateUnit(c, p.fresh[c.Turn], p.now)
		if !ok || s.admit(ctx, &u) != nil {
			continue
		}
		if b.provisional != nil {
			u.Origin = OriginProvisional
		}
		u.msg = "#" + itoa(c.Turn)
		p.units = append(p.units, u)
		p.unitTurn = append(p.unitTurn, c.Turn)
	}
}

// planSummary adds the session summary as a unit of its own, when admitted.
func (s *Store) planSummary(ctx context.Context, b *Batch, p *ingestPlan, summary Candidate, summaryTurn Turn) {
	u, ok := s.candidateUnit(summary, summaryTurn, p.now)
	if !ok || s.admit(ctx, &u) != nil {
		return
	}
	u.Agent = summaryTurn.Agent
	u.Subject = "summary:" + summaryTurn.SessionID
	u.Value = normKey(u.Content)
	u.Origin = "summary"
	u.SourceTurns = nil
	for _, t := range b.SummaryTurns {
		if t.TurnID != 0 {
			u.SourceTurns = append(u.SourceTurns, t.TurnID)
		}
	}
	p.units = append(p.units, u)
	p.unitTurn = append(p.unitTurn, -1)
}

// commitBatch writes a planned batch in tx: its sources, the boilerplate
// retracted, its units, and the injections its turns report.
//
// Its statements run without ctx's cancellation, checked between steps
// instead (see countInjected).
func (s *Store) commitBatch(ctx context.Context, tx *sqlconn.Tx, b *Batch, p *ingestPlan, res *IngestResult) error {
	qctx := context.WithoutCancel(ctx)
	if b.before != nil {
		if err := b.before(qctx, tx); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	skip, err := s.recordSources(qctx, tx, b, p, res)
	if err != nil {
		return err
	}
	res.Turns = len(p.fresh) - len(skip)
	for _, bs := range p.boiler {
		if err := s.retractBoilerplate(qctx, tx, bs, p.now); err != nil {
			return err
		}
	}
	if err := s.applyUnits(ctx, tx, b, p, skip, res); err != nil {
		return err
	}
	injected := injections{}
	for i, t := range p.fresh {
		if skip[i] || len(t.Injected) == 0 || b.provisional != nil {
			continue
		}
		injected.add(t.Injected, s.saidAt(t))
	}
	if len(injected) > 0 {
		if err := countInjected(ctx, tx, injected, s.injectFoldAt); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	if b.after != nil {
		return b.after(qctx, tx)
	}
	return nil
}

// recordSources marks the fresh turns as mined and returns those another
// writer mined meanwhile (counted as skipped), in one statement per up to
// 400 turns (RETURNING names the rows it inserted). A provisional pass
// leaves the turns to the real extraction.
func (s *Store) recordSources(ctx context.Context, tx *sqlconn.Tx, b *Batch, p *ingestPlan, res *IngestResult) (map[int]bool, error) {
	skip := map[int]bool{}
	if b.provisional != nil {
		return skip, nil
	}
	var idx []int // of the fresh turns with a source
	for i, t := range p.fresh {
		if t.Source != "" {
			idx = append(idx, i)
		}
	}
	for len(idx) > 0 {
		part := idx[:min(len(idx), 400)]
		idx = idx[len(part):]
		args := make([]any, 0, 2*len(part))
		for _, i := range part {
			args = append(args, p.fresh[i].Source, ms(p.now))
		}
		rows, err := tx.QueryContext(ctx, `INSERT OR IGNORE INTO memory_sources (source, at) VALUES (?, ?)`+
			strings.Repeat(", (?, ?)", len(part)-1)+` RETURNING source`, args...)
		if err != nil {
			return nil, fmt.Errorf("memory: sources: %w", err)
		}
		inserted, err := scanStrings(rows)
		if err != nil {
			return nil, fmt.Errorf("memory: sources: %w", err)
		}
		added := make(map[string]bool, len(inserted))
		for _, src := range inserted {
			added[src] = true
		}
		for _, i := range part {
			if src := p.fresh[i].Source; !added[src] {
				skip[i] = true // ingested concurrently (or twice in this batch)
				res.Skipped++
			} else {
				delete(added, src) // a repeat later in the batch is a duplicate
			}
		}
	}
	return skip, nil
}

// applyUnits consolidates each planned unit (but those of skipped turns)
// into the store, counting the outcomes.
func (s *Store) applyUnits(ctx context.Context, tx *sqlconn.Tx, b *Batch, p *ingestPlan, skip map[int]bool, res *IngestResult) error {
	batch := map[string]string{}
	for i := range p.units {
		if ti := p.unitTurn[i]; ti >= 0 && skip[ti] {
			continue
		}
		runtime.Gosched() // learning is background work: let requests run between units
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		var v []float32
		if p.vecs != nil {
			v = p.vecs[i]
		}
		out, uid, err := s.apply(context.WithoutCancel(ctx), tx, &p.units[i], v, p.now, batch) // checked above instead (see countInjected)
		if err != nil {
			return err
		}
		if p.units[i].msg != "" {
			batch[uid] = p.units[i].msg
		}
		switch out {
		case OutcomeAdded, OutcomeStale:
			res.Added++
		case OutcomeReinforced:
			res.Reinforced++
		case OutcomeSuperseded:
			res.Added++
			res.Superseded++
		}
		res.IDs = append(res.IDs, uid)
		b.provisional.note(out, uid)
	}
	return nil
}

// wait yields to requests being answered, when the batch says how.
func (b *Batch) wait(ctx context.Context) {
	if b.yield != nil {
		b.yield(ctx)
	}
}

// seenSources reports which of the turns' sources were ingested before.
func (s *Store) seenSources(ctx context.Context, turns []Turn) (map[string]bool, error) {
	seen := map[string]bool{}
	var args []any
	for _, t := range turns {
		if t.Source != "" {
			args = append(args, t.Source)
		}
	}
	for len(args) > 0 {
		n := min(len(args), 400)
		chunk := args[:n]
		args = args[n:]
		rows, err := s.r.QueryContext(ctx, `SELECT source FROM memory_sources WHERE source IN (?`+strings.Repeat(",?", len(chunk)-1)+`)`, chunk...)
		if err != nil {
			return nil, fmt.Errorf("memory: sources: %w", err)
		}
		for rows.Next() {
			var src string
			if err := rows.Scan(&src); err != nil {
				rows.Close()
				return nil, err
			}
			seen[src] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return seen, nil
}

// candidateUnit turns an extractor's candidate into a unit. Facts about the
// user and the project are shared by the scope's agents; episodes and
// session summaries stay private to the agent they happened with.
func (s *Store) candidateUnit(c Candidate, t Turn, now time.Time) (Unit, bool) {
	content, _ := Redact(strings.TrimSpace(c.Content))
	content = normalizeContent(content)
	if len(Terms(content)) == 0 {
		return Unit{}, false
	}
	typ, err := ParseType(string(c.Type))
	if err != nil {
		return Unit{}, false
	}
	// A statement about a secret that was redacted away is not worth keeping.
	if strings.Contains(content, RedactedPrefix) && typ != WorkingSummary {
		return Unit{}, false
	}
	said := s.saidAt(t)
	u := Unit{
		Scope: t.Scope, Type: typ, Content: content, Subject: oneLine(c.Subject, 200), Value: oneLine(c.Value, 200),
		Entities: mergeStrings(nil, c.Entities, 8), Tags: mergeStrings(nil, c.Tags, 8),
		Importance: clamp01(c.Importance, 0.5), Confidence: clamp01(c.Confidence, 0.7), Mentions: 1, Status: StatusActive,
		Origin: s.o.Extractor.Name(), SourceSession: t.SessionID, SaidAt: said, LastSeenAt: said, CreatedAt: now, UpdatedAt: now,
	}
	if t.TurnID != 0 {
		u.SourceTurns = []int64{t.TurnID}
	}
	if typ == Episodic || typ == WorkingSummary {
		u.Agent = t.Agent
	}
	if c.Correction {
		u.Tags = appendTag(u.Tags, "correction")
	}
	if c.TTL > 0 {
		e := said.Add(c.TTL)
		u.ExpiresAt = &e
	}
	return u, true
}

func clamp01(v, def float64) float64 {
	if v <= 0 || v != v {
		return def
	}
	return min(1, v)
}

// embedUnits embeds the units' content; nil without an embedder or on failure.
func (s *Store) embedUnits(ctx context.Context, units []Unit) [][]float32 {
	if s.o.Embedder == nil || len(units) == 0 {
		return nil
	}
	texts := make([]string, len(units))
	for i, u := range units {
		texts[i] = u.Content
	}
	vecs, err := s.o.Embedder.Embed(ctx, texts)
	if err != nil || len(vecs) != len(units) {
		s.o.Log.Warn().Err(err).Msg("memory: embedding failed; units stored without vectors")
		return nil
	}
	return vecs
}
