package skills

import (
	"context"
	"io/fs"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/skills/bank"
)

// TestTermCacheMatchesFTS5 checks that ranking by summed per-term bm25()
// (the request path: the in-memory BM25 index, or FTS5 per-term queries
// and their cache) gives the same skills, in the same order, with the same
// scores, as one FTS5 query over the OR'ed MATCH expression.
func TestTermCacheMatchesFTS5(t *testing.T) {
	for _, tc := range []struct {
		name string
		lib  func(t *testing.T) *Library
	}{
		{"bank", func(t *testing.T) *Library { l, _ := bankLib(t); return l }},
		{"synthetic-120", func(t *testing.T) *Library { return syntheticLibrary(t, 120) }},
		// The benchmarks' and proxybench's library.
		{"synthetic-1000", func(t *testing.T) *Library { return syntheticLibrary(t, 1000) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.name == "synthetic-1000" {
				t.Skip("short: the 1,000-skill library takes seconds to write and index")
			}
			lib := tc.lib(t)
			lib.noWarm = true
			snap := lib.snap.Load()
			if snap.kw == nil {
				t.Fatal("no in-memory BM25 index")
			}
			// The in-memory index (a cold turn: no term cache, no SQLite),
			// then without it: FTS5 per-term queries, cold, then cached.
			lib.terms.reset()
			checkMatchesFTS5(t, lib, snap)
			noIndex := *snap
			noIndex.kw = nil
			for round := 0; round < 2; round++ {
				checkMatchesFTS5(t, lib, &noIndex)
			}
		})
	}
}

func equivalenceCases(t *testing.T) [][]string {
	var out [][]string
	for _, c := range append(loadLabelled(t, "testdata/retrieval.jsonl"), loadLabelled(t, "testdata/retrieval_holdout.jsonl")...) {
		out = append(out, c.Texts)
	}
	// Non-ASCII terms (served by FTS5) mixed with ASCII ones; stems that
	// differ from their words; words no skill has.
	return append(out,
		[]string{"Café naïve Straße deploying migrations rollbacks"},
		[]string{"généralisation des déploiements, ÜBER-configured databases"},
		[]string{"zzqxv unknownword flibbertigibbet"},
		[]string{"agreed generalizations relational conditional hopefulness"},
	)
}

func checkMatchesFTS5(t *testing.T, lib *Library, snap *snapshot) {
	t.Helper()
	ctx := context.Background()
	all := func(int32) bool { return true }
	for _, texts := range equivalenceCases(t) {
		terms := snap.queryTerms(texts)
		got, _, err := lib.keywordHits(ctx, snap, terms, nil, all, 1000)
		if err != nil {
			t.Fatal(err)
		}
		want, err := lib.keywordHitsSQL(ctx, MatchExpr(terms), "", true, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d hits, FTS5 query has %d", texts, len(got), len(want))
		}
		for i := range got {
			if got[i].e.skill.Name != want[i].Skill.Name || math.Abs(got[i].keyword-want[i].Keyword) > 1e-9*math.Abs(want[i].Keyword) {
				t.Fatalf("%q: hit %d = %s (%.12f), FTS5 query says %s (%.12f)", texts, i, got[i].e.skill.Name, got[i].keyword, want[i].Skill.Name, want[i].Keyword)
			}
		}
	}
}

// TestBM25IndexFollowsReindex checks that editing, adding and removing
// skill files rebuilds the in-memory index (hot reload).
func TestBM25IndexFollowsReindex(t *testing.T) {
	lib, _ := bankLib(t)
	lib.noWarm = true
	ctx := context.Background()
	before := lib.snap.Load().kw
	if before == nil {
		t.Fatal("no in-memory BM25 index")
	}
	name := lib.List()[0].Name
	path := filepath.Join(lib.Dir(), name, FileName)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(raw, []byte("\nQuuxification of frobnicators.\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := lib.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	snap := lib.snap.Load()
	if snap.kw == before {
		t.Fatal("index not rebuilt after an edit")
	}
	ps, _ := snap.kwPostings("frobnicators")
	if len(ps) != 1 || snap.sorted[ps[0].idx].skill.Name != name {
		t.Fatalf("frobnicators: postings %v", ps)
	}
	checkMatchesFTS5(t, lib, snap)
	if err := os.RemoveAll(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	if _, err := lib.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	snap = lib.snap.Load()
	if ps, _ := snap.kwPostings("frobnicators"); len(ps) != 0 {
		t.Fatalf("removed skill still indexed: %v", ps)
	}
	checkMatchesFTS5(t, lib, snap)
}

// TestPorterMatchesFTS5 checks porterStem against SQLite's porter
// tokenizer over the vocabulary of the bank and the labelled queries.
func TestPorterMatchesFTS5(t *testing.T) {
	words := map[string]bool{}
	add := func(text string) {
		for _, w := range splitTerms(text) {
			if _, ok := ftsToken(w); ok {
				words[w] = true
			}
		}
	}
	for _, name := range bank.Names() {
		raw, err := fs.ReadFile(bank.FS(), name+"/"+FileName)
		if err != nil {
			t.Fatal(err)
		}
		add(string(raw))
	}
	for _, c := range append(loadLabelled(t, "testdata/retrieval.jsonl"), loadLabelled(t, "testdata/retrieval_holdout.jsonl")...) {
		add(strings.Join(c.Texts, " "))
	}
	// Classic Porter cases, every suffix of every step, and short words.
	add(`caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized
	hopping tanned falling hissing fizzed failing filing happy sky relational conditional rational valenci
	hesitanci digitizer conformabli radicalli differentli vileli analogousli vietnamization predication
	operator feudalism decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate
	formative formalize electriciti electrical hopeful goodness revival allowance inference airliner
	gyroscopic adjustable defensible irritant replacement adjustment dependent adoption homologou
	communism activate angulariti homologous effective bowdlerize probate rate cease controll roll
	generalizations oscillators archaeology biology logi bli yyy aing eed ied ies sss abc xyz ooo 404
	k8s utf8 ipv6 agre gener ate ion ions eing bying spying flying dying tying yelling quizzed`)
	// Random words over a small alphabet reach the stemmer's corner cases
	// (short stems, runs of y, doubled consonants).
	r := rand.New(rand.NewSource(1))
	const alphabet = "aeiouyybcdlnstzgmrwx"
	for i := 0; i < 20000; i++ {
		b := make([]byte, 1+r.Intn(12))
		for j := range b {
			b[j] = alphabet[r.Intn(len(alphabet))]
		}
		words[string(b)] = true
	}
	var list []string
	for w := range words {
		list = append(list, w)
	}
	lib, _ := newLib(t)
	ctx := context.Background()
	conn, err := lib.r.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		`CREATE VIRTUAL TABLE temp.pw USING fts5(w, tokenize = 'porter unicode61 remove_diacritics 2')`,
		`CREATE VIRTUAL TABLE temp.pwv USING fts5vocab(temp, pw, 'instance')`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range list {
		if _, err := conn.ExecContext(ctx, `INSERT INTO temp.pw(rowid, w) VALUES (?, ?)`, i+1, w); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := conn.QueryContext(ctx, `SELECT term, doc FROM temp.pwv`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var term string
		var doc int
		if err := rows.Scan(&term, &doc); err != nil {
			t.Fatal(err)
		}
		n++
		w := list[doc-1]
		if got, _ := ftsToken(w); got != term {
			t.Errorf("%q: porterStem gives %q, FTS5 %q", w, got, term)
		}
	}
	if n != len(list) {
		t.Fatalf("%d tokens for %d words", n, len(list))
	}
	t.Logf("%d words", n)
}
