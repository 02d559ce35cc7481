package skills

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// Skill embeddings: stored vectors loaded, missing ones computed in the
// background and attached to the snapshot.

type storedVec struct {
	hash string
	vec  []float32
}

func (l *Library) loadVectors(ctx context.Context) map[string]storedVec {
	if l.emb == nil {
		return nil
	}
	rows, err := l.r.QueryContext(ctx, `SELECT name, hash, vec FROM skill_vectors WHERE model = ?`, l.emb.Name())
	if err != nil {
		l.log.Warn().Err(err).Msg("skills: read vectors")
		return nil
	}
	defer rows.Close()
	out := map[string]storedVec{}
	for rows.Next() {
		var n, h string
		var b []byte
		if rows.Scan(&n, &h, &b) == nil {
			out[n] = storedVec{hash: h, vec: embed.Decode(b)}
		}
	}
	return out
}

// embedText is what a skill's vector is computed from.
func embedText(s *Skill) string {
	return s.Name + ". " + s.Description + ". " + strings.Join(s.Tags, ", ") + ". " + textclip.Prefix(s.Body, 1500)
}

// embedMissing computes vectors for skills that lack one, in the background.
func (l *Library) embedMissing() {
	if l.closed.Load() {
		return
	}
	if !l.embedRunning.CompareAndSwap(false, true) {
		l.embedAgain.Store(true)
		return
	}
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		defer l.embedRunning.Store(false)
		for round := 0; round < 5 && !l.closed.Load(); round++ {
			l.embedAgain.Store(false)
			if err := l.embedOnce(); err != nil {
				l.log.Warn().Err(err).Msg("skills: embedding skills failed; retrieval uses keywords for the rest")
				return
			}
			if !l.embedAgain.Load() {
				return
			}
		}
	}()
}

// EmbedWait runs the embedding pass synchronously (tests, CLI).
func (l *Library) EmbedWait(ctx context.Context) error {
	if l.emb == nil {
		return nil
	}
	return l.embedOnce()
}

func (l *Library) embedOnce() error {
	snap := l.snap.Load()
	var todo []*entry
	for _, e := range snap.sorted {
		if e.vec == nil {
			todo = append(todo, e)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	model := l.emb.Name()
	for start := 0; start < len(todo); start += 32 {
		if l.closed.Load() {
			return nil
		}
		batch := todo[start:min(start+32, len(todo))]
		texts := make([]string, len(batch))
		for i, e := range batch {
			texts[i] = embedText(e.skill)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		vecs, err := l.emb.Embed(ctx, texts)
		cancel()
		if err != nil {
			return err
		}
		now := l.now().UnixMilli()
		for i, e := range batch {
			if i >= len(vecs) || len(vecs[i]) == 0 {
				continue
			}
			if _, err := l.w.ExecContext(context.Background(), `INSERT INTO skill_vectors (name, model, hash, vec, updated_at) VALUES (?,?,?,?,?)
ON CONFLICT(name) DO UPDATE SET model=excluded.model, hash=excluded.hash, vec=excluded.vec, updated_at=excluded.updated_at`,
				e.skill.Name, model, e.embedHash, embed.Encode(vecs[i]), now); err != nil {
				return fmt.Errorf("store skill vector: %w", err)
			}
		}
		l.attachVectors(batch, vecs)
	}
	return nil
}

// attachVectors publishes a snapshot in which the given entries carry vectors.
func (l *Library) attachVectors(batch []*entry, vecs [][]float32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.snap.Load()
	next := &snapshot{byName: make(map[string]*entry, len(cur.byName)), sorted: make([]*entry, 0, len(cur.sorted)), active: cur.active, df: cur.df, gen: cur.gen, index: cur.index, kw: cur.kw, kwRetry: cur.kwRetry, flags: cur.flags}
	upd := map[string][]float32{}
	for i, e := range batch {
		if i < len(vecs) && len(vecs[i]) > 0 {
			upd[e.skill.Name+"\x00"+e.embedHash] = vecs[i]
		}
	}
	for _, e := range cur.sorted {
		if v, ok := upd[e.skill.Name+"\x00"+e.embedHash]; ok {
			cp := *e
			cp.vec = v
			e = &cp
		}
		next.byName[e.skill.Name] = e
		next.sorted = append(next.sorted, e)
	}
	next.version = l.version.Add(1)
	l.snap.Store(next)
}
