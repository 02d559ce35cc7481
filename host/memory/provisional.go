package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/sqlconn"
)

// A provisional pass makes a new session see what the agent's earlier
// sessions taught when the configured extractor is an LLM (seconds per
// call): the heuristic extracts the pending turns at once, into units of
// origin OriginProvisional, without moving the session's cursor or marking
// the turns as ingested. When the LLM extraction of those turns commits, it
// first withdraws what the pass did, in the same transaction: units the pass
// created are superseded (unless a real extraction has reinforced them
// since), units they had superseded are active again, and mentions they
// added are taken back. The result is the LLM's, as if the pass had never run.
//
// What each pass did is kept per session in memory_meta ("prov:<session>"),
// so withdrawal works across restarts.

// OriginProvisional is the origin of units from a provisional pass.
const OriginProvisional = "provisional"

// provisionalPass is carried by a Batch of a provisional pass.
type provisionalPass struct {
	extractor  Extractor
	created    []string
	reinforced []string
}

// note records what consolidating one unit did.
func (p *provisionalPass) note(outcome, uid string) {
	if p == nil {
		return
	}
	if outcome == OutcomeReinforced {
		p.reinforced = append(p.reinforced, uid)
	} else {
		p.created = append(p.created, uid)
	}
}

// provEntry is one provisional batch: turns (From, Through] of a session.
type provEntry struct {
	From       int64    `json:"from"`
	Through    int64    `json:"through"`
	Created    []string `json:"created,omitempty"`
	Reinforced []string `json:"reinforced,omitempty"`
}

func provKey(session string) string { return "prov:" + session }

func readJournal(ctx context.Context, q queryer, session string) ([]provEntry, error) {
	v, err := meta(ctx, q, provKey(session))
	if err != nil || v == "" {
		return nil, err
	}
	var j []provEntry
	if err := json.Unmarshal([]byte(v), &j); err != nil {
		return nil, fmt.Errorf("memory: provisional journal of %s: %w", session, err)
	}
	return j, nil
}

func writeJournal(ctx context.Context, tx *sqlconn.Tx, session string, j []provEntry) error {
	if len(j) == 0 {
		_, err := tx.ExecContext(ctx, `DELETE FROM memory_meta WHERE key = ?`, provKey(session))
		return err
	}
	b, _ := json.Marshal(j)
	return setMeta(ctx, tx, provKey(session), string(b))
}

// errOvertaken ends a provisional batch whose turns the real extraction
// ingested while the pass ran.
var errOvertaken = errors.New("memory: provisional pass overtaken by the real ingestion")

// quick reports whether new sessions need a provisional pass: the local
// store extracts with something slower than the heuristic.
func (in *Ingester) quick() bool {
	_, local := in.sink.(*Store)
	return local && in.mem.o.Extractor.Name() != (Heuristic{}).Name()
}

// provisional runs the heuristic over a session's pending turns not yet
// covered by an earlier pass.
func (in *Ingester) provisional(ctx context.Context, session string) (IngestResult, error) {
	return in.provisionalWith(ctx, session, Heuristic{})
}

func (in *Ingester) provisionalWith(ctx context.Context, session string, ex Extractor) (IngestResult, error) {
	var total IngestResult
	mu := in.lockFor(&in.provLocks, session)
	mu.Lock()
	defer mu.Unlock()
	host, err := in.mem.HostID(ctx)
	if err != nil {
		return total, err
	}
	cur, err := readCursor(ctx, in.st.Reader(), session)
	if err != nil {
		return total, err
	}
	j, err := readJournal(ctx, in.st.Reader(), session)
	if err != nil {
		return total, err
	}
	from := cur.last
	for _, e := range j {
		from = max(from, e.Through)
	}
	for range maxBatches {
		read, err := in.readTurns(ctx, host, session, from, batchTurns, nil)
		if err != nil || read.read == 0 {
			return total, err
		}
		last := read.last
		pass := &provisionalPass{extractor: ex}
		b := Batch{SessionID: session, provisional: pass, Turns: read.turns}
		start := from
		b.after = func(ctx context.Context, tx *sqlconn.Tx) error {
			c, err := readCursor(ctx, tx, session)
			if err != nil {
				return err
			}
			if c.last > start {
				return errOvertaken
			}
			j, err := readJournal(ctx, tx, session)
			if err != nil {
				return err
			}
			j = append(j, provEntry{From: start, Through: last, Created: pass.created, Reinforced: pass.reinforced})
			return writeJournal(ctx, tx, session, j)
		}
		res, err := in.mem.Ingest(ctx, b)
		if errors.Is(err, errOvertaken) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		total.add(res)
		from = last
		if read.read < batchTurns {
			break
		}
	}
	return total, nil
}

// withdraw undoes the provisional passes over turns up to upTo of a session,
// inside the transaction of the batch that mines them for real.
func withdraw(ctx context.Context, tx *sqlconn.Tx, session string, upTo int64, by string, now time.Time) error {
	j, err := readJournal(ctx, tx, session)
	if err != nil || len(j) == 0 {
		return err
	}
	var keep, done []provEntry
	for _, e := range j {
		if e.From >= upTo {
			keep = append(keep, e)
		} else {
			done = append(done, e)
		}
	}
	if len(done) == 0 {
		return nil
	}
	later := map[string]int{} // mentions still owed to passes not withdrawn yet
	for _, e := range keep {
		for _, uid := range e.Reinforced {
			later[uid]++
		}
	}
	for _, e := range done {
		for _, uid := range e.Reinforced {
			if _, err := tx.ExecContext(ctx, `UPDATE memory_units SET mentions = MAX(1, mentions - 1), updated_at = ? WHERE uid = ?`, ms(now), uid); err != nil {
				return fmt.Errorf("memory: withdraw: %w", err)
			}
			if err := touchUID(ctx, tx, uid); err != nil {
				return fmt.Errorf("memory: withdraw: %w", err)
			}
		}
	}
	for _, e := range done {
		for _, uid := range e.Created {
			if err := withdrawUnit(ctx, tx, uid, later[uid], by, now); err != nil {
				return err
			}
		}
	}
	return writeJournal(ctx, tx, session, keep)
}

// withdrawUnit supersedes a provisional unit and brings back what it had
// superseded. A unit that a real extraction reinforced since (more mentions
// than the later passes account for) stays.
func withdrawUnit(ctx context.Context, tx *sqlconn.Tx, uid string, later int, by string, now time.Time) error {
	u, err := unitByUID(ctx, tx, uid)
	if errors.Is(err, ErrNotFound) {
		return nil // forgotten meanwhile
	}
	if err != nil {
		return err
	}
	if u.Mentions-later > 1 {
		return nil
	}
	if u.Status == StatusActive {
		if err := supersede(ctx, tx, &u, "", now, "provisional: replaced by the "+by+" extraction of the same turns"); err != nil {
			return err
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+unitCols+` FROM memory_units WHERE vis = ? AND status = 'superseded' AND superseded_by = ?`, u.vis, uid)
	if err != nil {
		return fmt.Errorf("memory: withdraw: %w", err)
	}
	var back []Unit
	for rows.Next() {
		o, err := scanUnit(rows)
		if err != nil {
			rows.Close()
			return err
		}
		back = append(back, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range back {
		o := &back[i]
		if _, err := tx.ExecContext(ctx, `UPDATE memory_units SET status = 'active', superseded_by = '', updated_at = ? WHERE id = ?`, ms(now), o.rowid); err != nil {
			return fmt.Errorf("memory: withdraw: %w", err)
		}
		if err := index(ctx, tx, o.rowid, o.vis, indexTerms(o)); err != nil {
			return err
		}
		if err := event(ctx, tx, o.ID, o.Scope, "restored", map[string]string{"reason": "the provisional unit that superseded it was withdrawn", "by": uid}, now); err != nil {
			return err
		}
	}
	return nil
}
