package skills

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"

	"github.com/metaclaw-go/metaclaw/internal/strtab"
)

// bm25Index is FTS5's BM25 of every indexed term over every skill, built
// from the FTS5 index itself (fts5vocab 'instance': term, row, column,
// offset) each time the indexed content changes, so that the request path
// ranks without SQLite: a query term is case-folded and Porter-stemmed as
// FTS5 does (porterStem), then looked up. The scores are computed with
// fts5_aux.c's formula (k1 = 1.2, b = 0.75, IDF clamped to 1e-6, column
// weights bm25Weights, document length = the row's tokens over all
// columns); TestTermCacheMatchesFTS5 checks them against FTS5's bm25().
//
// The postings of every term sit in one flat array (term i owns
// post[start[i]:start[i+1]]), the token strings in one strtab.Table and
// the surface terms' token numbers in a slice beside the snapshot's
// document frequencies: a GC cycle has a handful of objects to mark here
// and no pointer per term or posting.
type bm25Index struct {
	terms *strtab.Table // FTS5 tokens, numbered in fts5vocab's order
	// surfTok is, for each of the library's own raw terms (df, whose
	// numbering it shares), its token's number: noToken when FTS5 did not
	// index its stem, unknownToken for a term that is not plain ASCII
	// (unicode61's folding is left to FTS5). A query term the skills
	// contain then costs one table lookup (termDF.index) for its document
	// frequency and its token together, instead of Porter stemming and a
	// token lookup.
	surfTok  []int32
	df       *termDF   // the document frequencies surfTok is numbered by
	start    []int32   // len(terms)+1 offsets into post
	post     []posting // -bm25 of each term per skill, term by term
	postings int
}

// lookup returns the postings of an FTS5 token (nil when no skill has it).
func (ix *bm25Index) lookup(tok []byte) []posting {
	i := ix.terms.IndexBytes(tok)
	if i < 0 {
		return nil
	}
	return ix.list(int32(i))
}

// list returns the postings of token number i.
func (ix *bm25Index) list(i int32) []posting {
	return ix.post[ix.start[i]:ix.start[i+1]:ix.start[i+1]]
}

// surface returns raw term number i's token number (noToken,
// unknownToken or a real one); ok is false when the index was built for
// other document frequencies than df.
func (ix *bm25Index) surface(df *termDF, i int) (tok int32, ok bool) {
	if ix.df != df || i < 0 || i >= len(ix.surfTok) {
		return 0, false
	}
	return ix.surfTok[i], true
}

// Token numbers a query term carries besides a real one.
const (
	noToken      = -2 // no skill has it
	unknownToken = -1 // not looked up: stem it (kwPostings)
)

// linkSurface fills surfTok from the library's raw terms.
func (ix *bm25Index) linkSurface(df *termDF) {
	ix.df = df
	ix.surfTok = make([]int32, df.len())
	var arr [porterMaxToken + 8]byte
	for i := range ix.surfTok {
		t := df.terms.Key(i)
		if !ftsASCII(t) {
			ix.surfTok[i] = unknownToken
			continue
		}
		ix.surfTok[i] = noToken
		if tok := ix.terms.IndexBytes(porterStemBytes(&arr, t)); tok >= 0 {
			ix.surfTok[i] = int32(tok)
		}
	}
}

// bm25ColWeights are bm25Weights by column (name, description, tags, body).
var bm25ColWeights = [4]float64{8, 4, 4, 1}

// maxIndexPostings bounds the in-memory index (16 bytes a posting, ~64 MB);
// a larger library ranks through FTS5 queries and the term cache instead.
const maxIndexPostings = 1 << 22

const vocabTable = "temp.skills_vocab_instance"

// buildBM25Index reads the FTS5 index. index maps skill names to their
// position in the snapshot; df is the snapshot's raw term counts.
func buildBM25Index(ctx context.Context, db *sql.DB, index map[string]int32, df *termDF) (*bm25Index, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `CREATE VIRTUAL TABLE IF NOT EXISTS `+vocabTable+` USING fts5vocab(main, 'skills_fts', 'instance')`); err != nil {
		return nil, fmt.Errorf("fts5vocab: %w", err)
	}
	pos, nRow, err := readSkillPositions(ctx, conn, index)
	if err != nil {
		return nil, err
	}
	raw, err := readVocabPostings(ctx, conn)
	if err != nil {
		return nil, err
	}
	ix := scorePostings(raw, pos, nRow)
	ix.linkSurface(df)
	return ix, nil
}

// readSkillPositions maps the skills' row ids to their position in the
// snapshot (-1 when not in it) and counts the rows: FTS5's row count is the
// number of rows indexed (the triggers keep skills_fts in step with skills).
func readSkillPositions(ctx context.Context, conn *sql.Conn, index map[string]int32) (map[int64]int32, int, error) {
	pos := map[int64]int32{}
	rows, err := conn.QueryContext(ctx, `SELECT id, name FROM skills`)
	if err != nil {
		return nil, 0, err
	}
	nRow := 0
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return nil, 0, err
		}
		nRow++
		if i, ok := index[name]; ok {
			pos[id] = i
		} else {
			pos[id] = -1
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return pos, nRow, nil
}

// rawPosting is one document of a term as fts5vocab lists it.
type rawPosting struct {
	doc  int64
	freq float64 // weighted: the sum of the column weights of its instances
}

// rawVocab is fts5vocab's instance table folded to one posting per term and
// document: term i is terms[ends[i-1]:ends[i]] (from 0 for the first) and owns
// post[start[i]:start[i+1]].
type rawVocab struct {
	terms  strings.Builder
	ends   []int32
	start  []int32
	post   []rawPosting
	docLen map[int64]int // tokens per document
	nToken int
}

// readVocabPostings reads every term instance from fts5vocab into
// postings by term, weighted by column, with each document's length in
// tokens and the total token count (bounded by maxIndexPostings). The
// rows come term by term, in order (fts5vocab walks the index).
func readVocabPostings(ctx context.Context, conn *sql.Conn) (*rawVocab, error) {
	v := &rawVocab{docLen: map[int64]int{}}
	rows, err := conn.QueryContext(ctx, `SELECT term, doc, col FROM `+vocabTable)
	if err != nil {
		return nil, fmt.Errorf("fts5vocab: %w", err)
	}
	defer rows.Close()
	var term, col sql.RawBytes
	var doc int64
	var prev []byte
	for rows.Next() {
		if err := rows.Scan(&term, &doc, &col); err != nil {
			return nil, err
		}
		if len(v.ends) == 0 || !bytes.Equal(term, prev) {
			if len(v.ends) > 0 && bytes.Compare(term, prev) < 0 {
				return nil, fmt.Errorf("fts5vocab: terms out of order (%q after %q)", term, prev)
			}
			v.terms.Write(term)
			v.ends = append(v.ends, int32(v.terms.Len()))
			v.start = append(v.start, int32(len(v.post)))
			prev = append(prev[:0], term...)
		}
		w := 1.0
		if len(col) > 0 {
			switch col[0] {
			case 'n':
				w = bm25ColWeights[0]
			case 'd':
				w = bm25ColWeights[1]
			case 't':
				w = bm25ColWeights[2]
			case 'b':
				w = bm25ColWeights[3]
			}
		}
		if n := len(v.post); n > int(v.start[len(v.start)-1]) && v.post[n-1].doc == doc {
			v.post[n-1].freq += w
		} else {
			if len(v.post) >= maxIndexPostings {
				return nil, fmt.Errorf("more than %d postings", maxIndexPostings)
			}
			v.post = append(v.post, rawPosting{doc: doc, freq: w})
		}
		v.docLen[doc]++
		v.nToken++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	v.start = append(v.start, int32(len(v.post)))
	return v, nil
}

// scorePostings turns the raw postings into bm25 scores by snapshot
// position, dropping the rows the snapshot does not hold.
func scorePostings(v *rawVocab, pos map[int64]int32, nRow int) *bm25Index {
	const k1, b = 1.2, 0.75
	avgdl := float64(v.nToken) / float64(nRow)
	nTerms := len(v.ends)
	ix := &bm25Index{start: make([]int32, 0, nTerms+1), post: make([]posting, 0, len(v.post))}
	terms := strtab.NewBuilder(nTerms, v.terms.Len())
	all := v.terms.String()
	from := int32(0)
	for i := range nTerms {
		ps := v.post[v.start[i]:v.start[i+1]]
		nHit := int64(len(ps))
		idf := math.Log((float64(int64(nRow)-nHit) + 0.5) / (float64(nHit) + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		terms.Add(all[from:v.ends[i]]) // number i: the rows come in order, each term once
		from = v.ends[i]
		ix.start = append(ix.start, int32(len(ix.post)))
		for _, p := range ps {
			at, ok := pos[p.doc]
			if !ok || at < 0 {
				continue
			}
			d := float64(v.docLen[p.doc])
			norm := float64(k1 * float64(float64(1-b)+float64(b*d)/avgdl))
			ix.post = append(ix.post, posting{idx: at, score: idf * (float64(p.freq*(k1+1)) / float64(p.freq+norm))})
		}
	}
	ix.start = append(ix.start, int32(len(ix.post)))
	ix.postings = len(ix.post)
	ix.terms = terms.Build()
	return ix
}

// ftsToken maps a query term (a lowercased splitTerms token) to the token
// FTS5 indexes for it. ok is false when the term is not plain ASCII: then
// unicode61's folding is left to FTS5 itself.
func ftsToken(term string) (string, bool) {
	if !ftsASCII(term) {
		return "", false
	}
	return porterStem(term), true
}

// ftsASCII says whether term is plain lowercase ASCII letters and digits
// (what the in-memory index can stem without unicode61's folding).
func ftsASCII(term string) bool {
	for i := 0; i < len(term); i++ {
		c := term[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
