package memory

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/sqlconn"
)

// The injection log. Which units were injected into the turns a batch mines
// is appended to memory_injections (one narrow row per unit and batch) in
// the ingest transaction, rather than updating each unit's row: the units
// injected into a job lie on as many pages of memory_units (~16 page
// writes per job), the log's new rows on one or two.
//
// The log is folded into memory_injection_counts (a narrow row per unit;
// migration 00012) by the ingest transaction that takes it to injectFoldAt
// rows, in one upsert followed by the DELETE of every row: the same
// transaction, so a row is folded exactly once, and a crash anywhere
// leaves either both or neither. The whole log at once: folded into
// memory_units' own wide rows, one page per unit, a log whose injections
// came from all over a large library was hundreds of pages and ~12 ms in
// one transaction, so folds took at most 64 units at a time (each paying a
// GROUP BY of the whole log to find where to stop); into the narrow rows,
// 512 rows over 512 units are 8 pages and ~2 ms (BenchmarkFoldInjections),
// less than the bounded folds that drained them took together.
//
// A unit's count is its memory_units.injected_count (folded there before
// migration 00012, or set by an import; nothing writes it after the unit's
// insert: reinforcing, editing and superseding keep its row id and leave
// it alone) plus its memory_injection_counts row plus its log rows, so no
// rewrite loses or recounts logged injections. A deleted unit takes its
// rows in both tables with it (triggers on memory_units: its row id may be
// reused by the next unit).
//
// Reads of the counts (Get, List and so Export, Search) add the three
// (withInjections). Ranking does not read them, so the in-memory index
// keeps the counts it was built with.

// injectFoldAt is how many rows the log holds before it is folded (see
// docs/performance.md, "Pages written per ingest job", for how it was
// chosen); Store.injectFoldAt, which tests lower, starts at it.
const injectFoldAt = 512

// injections counts, per unit, the turns of a batch it was injected into
// and the last of them.
type injections map[string]struct {
	n    int
	last time.Time
}

func (in injections) add(ids []string, at time.Time) {
	for _, id := range ids {
		uid, ok := strings.CutPrefix(id, "memory:")
		if !ok {
			continue
		}
		c := in[uid]
		c.n++
		if at.After(c.last) {
			c.last = at
		}
		in[uid] = c
	}
}

// countInjected logs that units were injected into the batch's turns, in
// one INSERT per up to 32 units (each statement costs more to run through
// database/sql than its rows), and folds the log once it holds foldAt
// rows. Ids of units that no longer exist log nothing.
//
// Its statements run without ctx's cancellation, checked between them
// instead: with a cancellable context, the SQLite driver starts a watcher
// goroutine per statement, each woken to exit when its statement ends,
// queued ahead of the proxy's request goroutines for the 2 Ps (a
// runtime/trace of tools/proxybench -loaded-only showed them runnable
// through the slowest 1% of requests).
func countInjected(ctx context.Context, tx *sqlconn.Tx, in injections, foldAt int) error {
	sctx := context.WithoutCancel(ctx)
	uids := make([]string, 0, len(in))
	for uid := range in {
		uids = append(uids, uid)
	}
	slices.Sort(uids) // reproducible
	// The log's rows are numbered 1… from the last time it was empty (a
	// row id is the largest plus one), so the id of the last row written
	// is at least how many it holds, without a query.
	var last int64
	for start := 0; start < len(uids); start += injectedRows[len(injectedRows)-1] {
		runtime.Gosched() // background work (see Ingest)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("memory: injected: %w", err)
		}
		part := uids[start:min(start+injectedRows[len(injectedRows)-1], len(uids))]
		k := 0
		for injectedRows[k] < len(part) {
			k++
		}
		args := make([]any, 0, 3*injectedRows[k])
		for _, uid := range part {
			c := in[uid]
			args = append(args, uid, c.n, ms(c.last))
		}
		for range injectedRows[k] - len(part) {
			args = append(args, "", 0, 0) // padding: no unit has an empty uid
		}
		res, err := tx.ExecContext(sctx, injectedSQL[k], args...)
		if err != nil {
			return fmt.Errorf("memory: injected: %w", err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			last, _ = res.LastInsertId()
		}
	}
	if last < int64(foldAt) {
		return nil
	}
	return foldInjections(sctx, tx)
}

// injectedRows are the sizes countInjected's statements come in (padded
// up), so the store keeps a few prepared statements rather than one per
// count.
var injectedRows = []int{4, 16, 32}

var injectedSQL = func() []string {
	out := make([]string, len(injectedRows))
	for i, n := range injectedRows {
		out[i] = `INSERT INTO memory_injections (unit, n, at)
SELECT u.id, c.n, c.at FROM (SELECT column1 AS uid, column2 AS n, column3 AS at FROM (VALUES (?, ?, ?)` + strings.Repeat(", (?, ?, ?)", n-1) + `)) AS c
JOIN memory_units u ON u.uid = c.uid`
	}
	return out
}()

// foldInjections adds the log's sums per unit to the units' narrow rows
// in memory_injection_counts and empties it, in tx. Units are not touched
// for the in-memory index: ranking does not read their counts. (WHERE
// true: an upsert's SELECT needs a WHERE clause to parse.)
func foldInjections(ctx context.Context, tx *sqlconn.Tx) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO memory_injection_counts (unit, n, at)
SELECT unit, SUM(n), MAX(at) FROM memory_injections WHERE true GROUP BY unit
ON CONFLICT (unit) DO UPDATE SET n = n + excluded.n, at = MAX(at, excluded.at)`); err != nil {
		return fmt.Errorf("memory: fold injections: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM memory_injections`); err != nil {
		return fmt.Errorf("memory: fold injections: %w", err)
	}
	return nil
}

// withInjections sets the units' InjectedCount and LastInjectedAt to their
// counts (see the log's comment above), read in one statement
// (one snapshot of both tables, whatever snapshot the units were read in).
func withInjections(ctx context.Context, q queryer, units []*Unit) error {
	byRow := make(map[int64][]*Unit, len(units))
	ids := make([]any, 0, len(units))
	for _, u := range units {
		if u.rowid == 0 {
			continue
		}
		if _, ok := byRow[u.rowid]; !ok {
			ids = append(ids, u.rowid)
		}
		byRow[u.rowid] = append(byRow[u.rowid], u)
	}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 400)]
		ids = ids[len(chunk):]
		in := `(?` + strings.Repeat(",?", len(chunk)-1) + `)`
		rows, err := q.QueryContext(ctx, `SELECT u.id, u.injected_count + IFNULL(c.n, 0) + IFNULL(p.n, 0), MAX(u.last_injected_at, IFNULL(c.at, 0), IFNULL(p.at, 0))
FROM memory_units u LEFT JOIN memory_injection_counts c ON c.unit = u.id
LEFT JOIN (SELECT unit, SUM(n) AS n, MAX(at) AS at FROM memory_injections WHERE unit IN `+in+` GROUP BY unit) AS p ON p.unit = u.id
WHERE u.id IN `+in, append(slices.Clip(chunk), chunk...)...)
		if err != nil {
			return fmt.Errorf("memory: injection counts: %w", err)
		}
		for rows.Next() {
			var id, last int64
			var n int
			if err := rows.Scan(&id, &n, &last); err != nil {
				rows.Close()
				return fmt.Errorf("memory: injection counts: %w", err)
			}
			for _, u := range byRow[id] {
				u.InjectedCount, u.LastInjectedAt = n, optTime(last)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("memory: injection counts: %w", err)
		}
	}
	return nil
}
