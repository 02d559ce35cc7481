package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// copyJournal copies the journal segments of one spool directory into a
// new one: what a crash at this instant leaves on disk.
func copyJournal(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "spool")
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	files := journalFiles(from)
	if len(files) == 0 {
		t.Fatalf("no journal segment in %s", from)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

func sessionTurns(t *testing.T, st store.Store, session string) []store.Turn {
	t.Helper()
	turns, err := st.SessionTurns(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return turns
}

// TestJournalReleasesAnswersAndLosesNoTurn: with a journal, ObserveDurable
// returns while the store's writer is held by someone else; a crash at that
// moment loses nothing (the next start writes the journal's turns), a crash
// after the commit but before the journal forgot the turns writes nothing
// twice, and a stop commits everything and leaves no journal behind.
func TestJournalReleasesAnswersAndLosesNoTurn(t *testing.T) {
	// With background_nice the commits nobody waits for run on a
	// background thread (recorder.persistAside): the same guarantees.
	for _, nice := range []int{0, DefaultBackgroundNice} {
		t.Run(fmt.Sprintf("background_nice %d", nice), func(t *testing.T) { journalLosesNoTurn(t, nice) })
	}
}

func journalLosesNoTurn(t *testing.T, nice int) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	c, g := newGated(t, dir, Options{SpoolDir: spool, BackgroundNice: nice})
	release := g.hold(t, c) // the writer is busy (an ingest transaction, say)
	const n = 5
	for i := 0; i < n; i++ {
		tr := turn("crash", fmt.Sprintf(`{"messages":[{"role":"user","content":"question %d"}]}`, i))
		tr.LatencyMS = int64(i)
		if err := c.ObserveDurable(context.Background(), tr); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(sessionTurns(t, g.SQLite, "crash")); got != 0 {
		t.Fatalf("%d turns committed while the writer was held", got)
	}

	// A crash now: a new process on the same database finds them.
	crashed, crashedLater := copyJournal(t, spool), copyJournal(t, spool)
	c2, st2 := newCore(t, Options{SpoolDir: crashed, BackgroundNice: nice})
	if err := c2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := sessionTurns(t, st2, "crash")
	if len(got) != n {
		t.Fatalf("recovered %d turns from the journal, want %d", len(got), n)
	}
	for i, tr := range got {
		if want := fmt.Sprintf("question %d", i); !strings.Contains(tr.RequestJSON, want) || tr.TurnIndex != i+1 {
			t.Fatalf("turn %d: index %d, request %s", i, tr.TurnIndex, tr.RequestJSON)
		}
	}
	if left := journalFiles(crashed); len(left) != 0 {
		t.Fatalf("recovered journal segments not deleted: %v", left)
	}

	// The writer frees up: the turns are committed and the journal forgets them.
	release()
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(sessionTurns(t, g.SQLite, "crash")); got != n {
		t.Fatalf("%d turns committed, want %d", got, n)
	}
	// A crash after those commits but before the segment was deleted (the
	// same image on disk): the next start recognises every turn and writes
	// none twice.
	c3 := New(Options{Store: g, Log: c.log, SpoolDir: crashedLater, BackgroundNice: nice})
	if err := c3.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	c3.Close()
	if got := len(sessionTurns(t, g.SQLite, "crash")); got != n {
		t.Fatalf("%d turns after recovering a journal already committed, want %d", got, n)
	}

	// A stop: everything queued is committed, no segment is left.
	if err := c.ObserveDurable(context.Background(), turn("stop", "{}")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if got := len(sessionTurns(t, g.SQLite, "stop")); got != 1 {
		t.Fatalf("turn observed before the stop: %d stored", got)
	}
	if left := journalFiles(spool); len(left) != 0 {
		t.Fatalf("journal segments left after a clean stop: %v", left)
	}
}

// TestJournalRotatesIntoSpareSegments: rotations continue in segments
// created ahead; a crash image (spare included) recovers every turn in
// order; committed segments are deleted; a stop leaves no file.
func TestJournalRotatesIntoSpareSegments(t *testing.T) {
	dir := t.TempDir()
	j, left, err := openJournal(dir)
	if err != nil || len(left) != 0 {
		t.Fatalf("open: %v, left %v", err, left)
	}
	j.max = 600 // a few turns per segment
	var segs []uint64
	var turns []*store.Turn
	for i := 0; i < 40; i++ {
		tr := turn("rot", fmt.Sprintf(`{"messages":[{"role":"user","content":"question %02d"}]}`, i))
		tr.CreatedAt = time.Unix(1700000000, int64(i)*int64(time.Millisecond))
		tr.LatencyMS = int64(i)
		seg, err := j.append(tr)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(segs); n > 0 && seg < segs[n-1] {
			t.Fatalf("turn %d went to segment %d, before %d", i, seg, segs[n-1])
		}
		segs, turns = append(segs, seg), append(turns, tr)
	}
	if segs[0] == segs[len(segs)-1] {
		t.Fatal("no rotation happened")
	}

	// A crash now: every turn is read back, in order, from the segments
	// (an empty spare among them reads as none).
	j.bg.Wait() // a spare that came too late is deleted
	var got []*store.Turn
	for _, f := range journalFiles(dir) {
		ts, err := readSpool(f)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ts...)
	}
	if len(got) != len(turns) {
		t.Fatalf("read back %d turns, want %d", len(got), len(turns))
	}
	for i := range got {
		if got[i].LatencyMS != int64(i) {
			t.Fatalf("turn %d read back as turn %d", i, got[i].LatencyMS)
		}
	}

	// Commits: every segment but the current one is deleted.
	for _, seg := range segs {
		j.done(seg)
	}
	j.bg.Wait() // closes of rotated segments
	j.mu.Lock()
	cur, spare := j.path(j.seg), j.spare
	j.mu.Unlock()
	for _, f := range journalFiles(dir) {
		if f != cur && (spare == nil || f != spare.Name()) {
			t.Fatalf("committed segment %s not deleted (current %s)", f, cur)
		}
	}
	j.close()
	if left := journalFiles(dir); len(left) != 0 {
		t.Fatalf("segments left after close: %v", left)
	}
}

// BenchmarkJournalAppend is the journal's part of every answer: one turn
// shaped like an agent's (a 6 KB request) appended before the answer is
// released.
func BenchmarkJournalAppend(b *testing.B) {
	j, _, err := openJournal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer j.close()
	turn := &store.Turn{SessionID: "s", Agent: "default", TurnType: TurnMain, ClientAPI: "openai", UpstreamAPI: "openai", Model: "m",
		RequestJSON:  `{"model":"m","messages":[{"role":"system","content":"` + strings.Repeat("You are a coding agent. ", 250) + `"}]}`,
		ResponseText: "Hello there.", Status: 200, CreatedAt: time.Now(), InjectedJSON: `["memory:abc","skill:x"]`}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seg, err := j.append(turn)
		if err != nil {
			b.Fatal(err)
		}
		j.done(seg)
	}
}
