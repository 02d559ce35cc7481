package skills

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/llm"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/tokens"
	"github.com/metaclaw-go/metaclaw/host/transcript"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// Job kinds of the evolver.
const (
	// JobEvolveSession runs when a session ends (explicitly, idle, …).
	JobEvolveSession = "skills_evolve"
	// JobEvolveTurns runs every skills.evolution_every_n_turns main turns.
	JobEvolveTurns = "skills_evolve_turns"
)

// Review modes (skills.review).
const (
	ReviewAuto   = "auto"
	ReviewManual = "manual"
)

// Completer is the LLM call the evolver needs (*llm.Client).
type Completer interface {
	Complete(ctx context.Context, req llm.Request) (llm.Response, error)
}

// EvolverOptions configure the evolver.
type EvolverOptions struct {
	Lib   *Library
	Store store.Store // turns (transcripts) and the progress table
	// DB is the store's writer pool (progress per session).
	DB  *sql.DB
	LLM Completer
	// Review: auto applies checked proposals; manual leaves them pending.
	Review string
	// MaxNewSkills bounds creations per run (skills.max_new_skills).
	MaxNewSkills int
	// EveryNTurns also runs the evolver every N main turns of a session (0: only at session end).
	EveryNTurns int
	// Timeout bounds one run (the LLM call included). Default 3 min.
	Timeout time.Duration
	Log     zerolog.Logger
	Now     func() time.Time
}

// Evolver turns sessions into new or improved skills.
type Evolver struct {
	o EvolverOptions
}

// NewEvolver returns an evolver.
func NewEvolver(o EvolverOptions) *Evolver {
	if o.Review == "" {
		o.Review = ReviewAuto
	}
	if o.MaxNewSkills <= 0 {
		o.MaxNewSkills = 3
	}
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Evolver{o: o}
}

// Register adds the evolver to the core: a durable job at every session
// end and, when EveryNTurns > 0, one every N main turns.
func (ev *Evolver) Register(c *core.Core) {
	c.OnSessionEnd(JobEvolveSession, ev.handle)
	if ev.o.EveryNTurns > 0 {
		c.HandleJobs(JobEvolveTurns, ev.handle)
		n := ev.o.EveryNTurns
		c.OnTurn(func(ctx context.Context, t *store.Turn) {
			if t.TurnType != core.TurnMain || t.Status < 200 || t.Status >= 300 || t.TurnIndex <= 0 || t.TurnIndex%n != 0 {
				return
			}
			if err := c.Enqueue(ctx, JobEvolveTurns, evolvePayload{SessionID: t.SessionID, UpTo: t.ID}, time.Now()); err != nil {
				ev.o.Log.Error().Err(err).Str("session", t.SessionID).Msg("skills: could not schedule evolution")
			}
		})
	}
}

// evolvePayload is the job payload (core.SessionEnd's session_id also fits).
type evolvePayload struct {
	SessionID string `json:"session_id"`
	UpTo      int64  `json:"upto_turn_id,omitempty"`
}

func (ev *Evolver) handle(ctx context.Context, payload json.RawMessage) error {
	var p evolvePayload
	if err := json.Unmarshal(payload, &p); err != nil || p.SessionID == "" {
		ev.o.Log.Error().RawJSON("payload", payload).Msg("skills: evolution job without a session id; dropped")
		return nil
	}
	_, err := ev.RunSession(ctx, p.SessionID, p.UpTo)
	return err
}

// Rejection is a proposal that did not make it, and why.
type Rejection struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Report says what one run did.
type Report struct {
	SessionID string      `json:"session_id"`
	Exchanges int         `json:"exchanges"`
	Skipped   string      `json:"skipped,omitempty"` // why the LLM was not called
	Created   []string    `json:"created,omitempty"`
	Updated   []string    `json:"updated,omitempty"`
	Pending   []string    `json:"pending,omitempty"` // waiting for review
	Unchanged []string    `json:"unchanged,omitempty"`
	Rejected  []Rejection `json:"rejected,omitempty"`
	// InputRemoved counts the sentences of the session kept out of the
	// evolver's prompt because they steer the agent (evolveinput.go).
	InputRemoved int `json:"input_removed,omitempty"`
}

// RunSession reads the session's exchanges the evolver has not seen yet (up
// to turn id upTo when non-zero), asks the LLM for proposals and applies
// the ones that pass the checks. An LLM error is returned (the job is
// retried); a malformed answer is rejected and logged, not retried.
func (ev *Evolver) RunSession(ctx context.Context, sessionID string, upTo int64) (Report, error) {
	rep := Report{SessionID: sessionID}
	ctx, cancel := context.WithTimeout(ctx, ev.o.Timeout)
	defer cancel()
	last, err := ev.progress(ctx, sessionID)
	if err != nil {
		return rep, err
	}
	all, err := transcript.Session(ctx, ev.o.Store, sessionID)
	if err != nil {
		return rep, fmt.Errorf("skills evolve %s: %w", sessionID, err)
	}
	var xs []transcript.Exchange
	contextFrom := 0
	for _, x := range all {
		if upTo > 0 && x.TurnID > upTo {
			break
		}
		if x.User == "" && x.Assistant == "" {
			continue
		}
		xs = append(xs, x)
	}
	newest := last
	for i, x := range xs {
		if x.TurnID <= last {
			contextFrom = i + 1
		}
		newest = max(newest, x.TurnID)
	}
	// Keep at most two reviewed exchanges for context, and at most 24 in all.
	start := max(0, contextFrom-2)
	if len(xs)-start > 24 {
		start = len(xs) - 24
	}
	xs, notes := learnerInput(xs[start:])
	contextFrom = max(0, contextFrom-start)
	for _, n := range notes {
		rep.InputRemoved += len(n.removed)
		for _, f := range n.removed {
			ev.o.Log.Warn().Str("session", sessionID).Str("rule", f.Rule).Str("detail", f.Detail).Msg("skills: steering text kept out of the evolver's input")
		}
	}
	fresh := xs[min(contextFrom, len(xs)):]
	rep.Exchanges = len(fresh)
	ann := annotate(xs)
	userTurns, userChars := 0, 0
	for _, x := range fresh {
		if x.User != "" {
			userTurns++
			userChars += len(x.User)
		}
	}
	switch {
	case len(fresh) == 0:
		rep.Skipped = "no new exchanges"
	case userTurns == 0 || userChars < 20:
		rep.Skipped = "nothing the user said"
	case userTurns < 2 && !hasSignals(ann[contextFrom:]):
		rep.Skipped = "a single exchange without corrections or failures"
	}
	if rep.Skipped != "" {
		ev.o.Log.Debug().Str("session", sessionID).Str("reason", rep.Skipped).Msg("skills: evolution skipped")
		return rep, ev.setProgress(ctx, sessionID, newest)
	}

	var texts []string
	for _, x := range fresh {
		if x.User != "" {
			texts = append(texts, x.User)
		}
	}
	if len(texts) > 6 {
		texts = texts[len(texts)-6:]
	}
	related, others := ev.context(ctx, texts)
	prompt := buildEvolverPrompt(related, others, ann, notes, contextFrom, ev.o.MaxNewSkills, newFence())
	temp := 0.2
	resp, err := ev.o.LLM.Complete(ctx, llm.Request{
		System: evolverSystem + ProposalSchema, Messages: []llm.Message{{Role: "user", Content: prompt}},
		MaxTokens: 4000, Temperature: &temp, JSON: true,
	})
	if err != nil {
		return rep, fmt.Errorf("skills evolve %s: %w", sessionID, err)
	}
	raw, ok := llm.ExtractJSON(resp.Text)
	var props []Proposal
	if ok {
		props, err = ParseProposals([]byte(raw))
	} else {
		err = errors.New("the answer holds no JSON object")
	}
	if err != nil {
		reason := "malformed evolver answer: " + err.Error()
		rep.Rejected = append(rep.Rejected, Rejection{Name: "-", Reason: reason})
		ev.o.Log.Warn().Str("session", sessionID).Str("reason", reason).Msg("skills: evolver answer rejected")
		_ = ev.o.Lib.Record(ctx, "-", 0, Event{Action: "rejected", Source: "evolver", SessionID: sessionID, Reason: reason}, textclip.Ellipsis(resp.Text, 4000))
		return rep, ev.setProgress(ctx, sessionID, newest)
	}
	if err := ev.Apply(ctx, sessionID, props, &rep); err != nil {
		return rep, err
	}
	ev.o.Log.Info().Str("session", sessionID).Int("exchanges", rep.Exchanges).Strs("created", rep.Created).Strs("updated", rep.Updated).
		Strs("pending", rep.Pending).Int("rejected", len(rep.Rejected)).Msg("skills: evolution done")
	return rep, ev.setProgress(ctx, sessionID, newest)
}

// context picks the existing skills shown to the evolver: the closest ones
// in full, the next ones by name and description.
func (ev *Evolver) context(ctx context.Context, texts []string) (related, others []*Skill) {
	hits, err := ev.o.Lib.Search(ctx, SearchOptions{Texts: texts, Limit: 40, All: true})
	if err != nil {
		ev.o.Log.Warn().Err(err).Msg("skills: search for the evolver")
	}
	for i, h := range hits {
		if i < 5 {
			related = append(related, h.Skill)
		} else {
			others = append(others, h.Skill)
		}
	}
	return related, others
}

// Apply checks proposals and applies those that pass, according to the
// review mode. Every decision lands in the skill history.
func (ev *Evolver) Apply(ctx context.Context, sessionID string, props []Proposal, rep *Report) error {
	created := 0
	for _, p := range props {
		if err := ev.applyOne(ctx, sessionID, p, &created, rep); err != nil {
			return err
		}
	}
	return nil
}

func (ev *Evolver) reject(ctx context.Context, sessionID string, p Proposal, rep *Report, reason string) {
	rep.Rejected = append(rep.Rejected, Rejection{Name: p.Name, Reason: reason})
	ev.o.Log.Warn().Str("session", sessionID).Str("skill", p.Name).Str("action", p.Action).Str("reason", reason).Msg("skills: proposal rejected")
	content, _ := json.Marshal(p)
	if err := ev.o.Lib.Record(ctx, p.Name, 0, Event{Action: "rejected", Source: "evolver", SessionID: sessionID, Reason: reason}, string(content)); err != nil {
		ev.o.Log.Error().Err(err).Msg("skills: record rejection")
	}
}

// newFindings drops findings the current version already had (text the user
// or the bank put there, e.g. a security skill quoting an injection).
func newFindings(proposed, current []Finding) []Finding {
	var out []Finding
	for _, f := range proposed {
		if !slices.Contains(current, f) {
			out = append(out, f)
		}
	}
	return out
}

func skillText(name, description string, tags []string, body string) string {
	return name + "\n" + description + "\n" + strings.Join(tags, "\n") + "\n" + body
}

func (ev *Evolver) applyOne(ctx context.Context, sessionID string, p Proposal, created *int, rep *Report) error {
	if n := tokens.Count(p.Body); n > MaxProposalBodyTokens {
		ev.reject(ctx, sessionID, p, rep, fmt.Sprintf("body is %d tokens; at most %d", n, MaxProposalBodyTokens))
		return nil
	}
	target, merge := ev.proposalTarget(p)
	if reason := unsafeProposal(p, target); reason != "" {
		ev.reject(ctx, sessionID, p, rep, reason)
		return nil
	}
	now := ev.o.Now().UTC().Truncate(time.Second)
	ev0 := Event{Source: "evolver", SessionID: sessionID, Reason: p.Rationale}
	if target == nil {
		return ev.createSkill(ctx, sessionID, p, created, rep, now, ev0)
	}
	cur := target.skill
	if cur.Status == StatusDisabled {
		ev.reject(ctx, sessionID, p, rep, fmt.Sprintf("skill %s is disabled by the user; not changed", cur.Name))
		return nil
	}
	next, changed := ev.revise(p, cur, merge, now, &ev0)
	if !changed {
		rep.Unchanged = append(rep.Unchanged, cur.Name)
		return nil
	}
	if merged := skillText(next.Name, next.Description, next.Tags, next.Body); len(next.Body) > MaxProposalBodyChars*2 || tokens.Count(merged) > MaxProposalBodyTokens*2 {
		ev.reject(ctx, sessionID, p, rep, fmt.Sprintf("the updated skill %s would be too long; propose a tighter rewrite", cur.Name))
		return nil
	}
	return ev.saveRevision(ctx, cur, next, now, ev0, rep)
}

// proposalTarget finds the skill a proposal concerns: the one of its name,
// else a near-duplicate to merge it into (merge), else none (a new skill).
func (ev *Evolver) proposalTarget(p Proposal) (target *entry, merge bool) {
	target, exact := ev.o.Lib.snap.Load().byName[p.Name]
	if exact {
		return target, false
	}
	if e, sim := ev.o.Lib.nearest(p.Name, p.Description, p.Tags, p.Body); e != nil {
		ev.o.Log.Info().Str("proposal", p.Name).Str("skill", e.skill.Name).Float64("similarity", sim.max()).Msg("skills: proposal is a near-duplicate; merging into the existing skill")
		return e, true
	}
	return target, false
}

// unsafeProposal says why a proposal fails the safety checks ("" when it
// passes): only findings the target skill does not already have count.
func unsafeProposal(p Proposal, target *entry) string {
	var current []Finding
	if target != nil {
		current = CheckText(skillText(target.skill.Name, target.skill.Description, target.skill.Tags, target.skill.Body))
	}
	f := newFindings(CheckText(skillText(p.Name, p.Description, p.Tags, p.Body)), current)
	if len(f) == 0 {
		return ""
	}
	var reasons []string
	for _, x := range f {
		reasons = append(reasons, x.String())
	}
	return "failed safety checks: " + strings.Join(reasons, "; ")
}

// createSkill saves a proposal as a new skill (pending under manual
// review), within skills.max_new_skills per run.
func (ev *Evolver) createSkill(ctx context.Context, sessionID string, p Proposal, created *int, rep *Report, now time.Time, ev0 Event) error {
	if *created >= ev.o.MaxNewSkills {
		ev.reject(ctx, sessionID, p, rep, fmt.Sprintf("more than skills.max_new_skills (%d) new skills in one run", ev.o.MaxNewSkills))
		return nil
	}
	s := &Skill{Name: p.Name, Description: p.Description, Category: p.Category, Tags: p.Tags, Body: p.Body,
		Status: StatusActive, Generation: 1, Source: "evolver", Created: now, Updated: now}
	ev0.Action = "created"
	if ev.o.Review == ReviewManual {
		s.Status, ev0.Action = StatusPending, "proposed"
	}
	if _, err := ev.o.Lib.Save(ctx, s, ev0); err != nil {
		return err
	}
	*created++
	if s.Status == StatusPending {
		rep.Pending = append(rep.Pending, s.Name)
	} else {
		rep.Created = append(rep.Created, s.Name)
	}
	return nil
}

// revise builds the new version of an existing skill from a proposal:
// merged in (a near-duplicate) or replacing description and body. changed
// is false when the proposal adds nothing.
func (ev *Evolver) revise(p Proposal, cur *Skill, merge bool, now time.Time, ev0 *Event) (next *Skill, changed bool) {
	next = cur.Clone()
	if merge {
		body, changed := mergeBody(cur.Body, p.Body, now)
		if !changed && tagsSubset(p.Tags, cur.Tags) {
			ev.o.Log.Info().Str("proposal", p.Name).Str("skill", cur.Name).Msg("skills: near-duplicate proposal adds nothing; skipped")
			return nil, false
		}
		next.Body = body
		next.Tags = unionTags(cur.Tags, p.Tags)
		ev0.Action = "merged"
		ev0.Reason = fmt.Sprintf("proposal %q merged: %s", p.Name, p.Rationale)
		return next, true
	}
	if p.Description == cur.Description && p.Body == cur.Body && slices.Equal(unionTags(cur.Tags, p.Tags), cur.Tags) {
		return nil, false
	}
	next.Description, next.Body = p.Description, p.Body
	next.Tags = unionTags(cur.Tags, p.Tags)
	if p.Category != "" && cur.Category == "general" {
		next.Category = p.Category
	}
	ev0.Action = "updated"
	return next, true
}

// saveRevision writes the new version of a skill. A pending new skill is
// still a proposal: it is revised in place. A live skill gets it applied
// (auto review) or proposed; skills the user wrote by hand, and skills with
// an edit already waiting for review, only ever get proposals.
func (ev *Evolver) saveRevision(ctx context.Context, cur, next *Skill, now time.Time, ev0 Event, rep *Report) error {
	lib := ev.o.Lib
	if cur.Status == StatusPending {
		if _, err := lib.Update(ctx, cur.Name, true, ev0, func(s *Skill) error {
			s.Description, s.Body, s.Tags, s.Category = next.Description, next.Body, next.Tags, next.Category
			return nil
		}); err != nil {
			return err
		}
		rep.Pending = append(rep.Pending, cur.Name)
		return nil
	}
	if ev.o.Review == ReviewManual || cur.Source == "user" || cur.Source == "" || cur.HasProposal {
		next.Generation = cur.Generation + 1
		next.Updated = now
		ev0.Action = "proposed"
		if err := lib.SaveProposal(ctx, next, ev0); err != nil {
			return err
		}
		rep.Pending = append(rep.Pending, cur.Name)
		return nil
	}
	if _, err := lib.Update(ctx, cur.Name, true, ev0, func(s *Skill) error {
		s.Description, s.Body, s.Tags, s.Category = next.Description, next.Body, next.Tags, next.Category
		return nil
	}); err != nil {
		return err
	}
	rep.Updated = append(rep.Updated, cur.Name)
	return nil
}

// mergeBody appends the lines of a near-duplicate proposal that the existing
// body does not already say, under a dated heading.
func mergeBody(existing, proposed string, now time.Time) (string, bool) {
	have := map[string]bool{}
	for _, ln := range strings.Split(existing, "\n") {
		if k := lineKey(ln); k != "" {
			have[k] = true
		}
	}
	var add []string
	for _, ln := range strings.Split(proposed, "\n") {
		k := lineKey(ln)
		if k == "" || have[k] || strings.HasPrefix(strings.TrimSpace(ln), "#") {
			continue
		}
		have[k] = true
		add = append(add, strings.TrimRight(ln, " \t"))
	}
	if len(add) == 0 {
		return existing, false
	}
	return strings.TrimRight(existing, "\n") + "\n\n## Learned " + now.Format("2006-01-02") + "\n\n" + strings.Join(add, "\n"), true
}

// lineKey normalises a line for comparison: lowercase words, no list markers.
func lineKey(ln string) string {
	ws := splitTerms(ln)
	if len(ws) < 3 {
		return ""
	}
	return strings.Join(ws, " ")
}

func unionTags(a, b []string) []string {
	out := slices.Clone(a)
	for _, t := range b {
		if !slices.Contains(out, t) && len(out) < 24 {
			out = append(out, t)
		}
	}
	return out
}

func tagsSubset(a, b []string) bool {
	for _, t := range a {
		if !slices.Contains(b, t) {
			return false
		}
	}
	return true
}

// progress is the last turn id the evolver has read for a session.
func (ev *Evolver) progress(ctx context.Context, sessionID string) (int64, error) {
	var last int64
	err := ev.o.DB.QueryRowContext(ctx, `SELECT last_turn_id FROM skill_evolutions WHERE session_id = ?`, sessionID).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("skills evolve progress: %w", err)
	}
	return last, nil
}

func (ev *Evolver) setProgress(ctx context.Context, sessionID string, last int64) error {
	_, err := ev.o.DB.ExecContext(context.WithoutCancel(ctx), `INSERT INTO skill_evolutions (session_id, last_turn_id, runs, updated_at) VALUES (?, ?, 1, ?)
ON CONFLICT(session_id) DO UPDATE SET last_turn_id = MAX(last_turn_id, excluded.last_turn_id), runs = runs + 1, updated_at = excluded.updated_at`,
		sessionID, last, ev.o.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("skills evolve progress: %w", err)
	}
	return nil
}
